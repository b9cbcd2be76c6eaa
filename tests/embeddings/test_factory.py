"""Choosing a provider from KG_EMBEDDER and friends."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kg.embeddings import (
    HashingEmbedder,
    MiniLMEmbedder,
    OpenAICompatibleEmbedder,
    factory,
    minilm,
    provider_from_config,
)
from kg.errors import ConfigurationError

OPENAI_ENV = {
    "KG_EMBEDDER": "openai",
    "KG_EMBEDDER_URL": "http://127.0.0.1:9/v1/",
    "KG_EMBEDDER_MODEL": "nomic-embed-text",
    "KG_EMBEDDER_API_KEY": "sk-x",
    "KG_EMBEDDER_DIMENSIONS": "768",
}


def test_hashing() -> None:
    provider = provider_from_config(env={"KG_EMBEDDER": "hashing"})
    assert isinstance(provider, HashingEmbedder)
    assert provider.model_id == "hashing-v1-384"
    assert provider.is_fallback is True


def test_hashing_with_dimensions() -> None:
    provider = provider_from_config("hashing", env={"KG_EMBEDDER_DIMENSIONS": "128"})
    assert provider.dimensions == 128
    assert len(provider.embed(["x"])[0]) == 128


def test_minilm_is_chosen_without_loading_anything() -> None:
    code = (
        "import sys; from kg.embeddings import provider_from_config; "
        "p = provider_from_config(env={'KG_EMBEDDER': ' MiniLM '}); "
        "print(type(p).__name__, p.model_id, 'tokenizers' in sys.modules, "
        "'onnxruntime' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.split() == [
        "MiniLMEmbedder",
        minilm.MODEL_ID,
        "False",
        "False",
    ]


@pytest.mark.parametrize("variant", ["fp32", "int8"])
def test_minilm_variant_by_name(variant: str) -> None:
    provider = provider_from_config(f"minilm-{variant}", env={})
    assert isinstance(provider, MiniLMEmbedder)
    assert provider.variant == variant
    assert provider.model_id == minilm.MODEL_IDS[variant]
    assert provider_from_config(env={"KG_EMBEDDER": "minilm"}).model_id == minilm.MODEL_ID


def test_minilm_rejects_other_dimensions() -> None:
    with pytest.raises(ConfigurationError, match="384"):
        provider_from_config("minilm", env={"KG_EMBEDDER_DIMENSIONS": "768"})


def test_openai() -> None:
    provider = provider_from_config(env=OPENAI_ENV)
    assert isinstance(provider, OpenAICompatibleEmbedder)
    assert provider.url == "http://127.0.0.1:9/v1/embeddings"
    assert provider.model_id == "openai:nomic-embed-text"
    assert provider.dimensions == 768  # configured, so no request is made


def test_openai_needs_url_and_model() -> None:
    with pytest.raises(ConfigurationError, match="KG_EMBEDDER_URL and KG_EMBEDDER_MODEL"):
        provider_from_config("openai", env={})


def test_auto_prefers_minilm_when_installed() -> None:
    assert factory.minilm_available() is True  # this environment has the semantic extra
    provider = provider_from_config(env={})
    assert isinstance(provider, MiniLMEmbedder)
    assert provider_from_config(env={"KG_EMBEDDER": "auto"}).model_id == provider.model_id


def test_auto_falls_back_to_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factory, "minilm_available", lambda: False)
    provider = provider_from_config(env={"KG_EMBEDDER": "auto"})
    assert isinstance(provider, HashingEmbedder)
    assert provider.is_fallback is True


def test_explicit_name_overrides_environment() -> None:
    provider = provider_from_config("hashing", env={"KG_EMBEDDER": "openai"})
    assert isinstance(provider, HashingEmbedder)


def test_minilm_availability_detects_a_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(factory, "MODEL_PACKAGE", "kg_no_such_model_package")
    assert factory.minilm_available() is False


def test_minilm_availability_needs_onnxruntime_and_tokenizers_but_not_torch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "torch" not in factory.MINILM_MODULES
    assert {"onnxruntime", "tokenizers"} <= set(factory.MINILM_MODULES)
    monkeypatch.setattr(factory, "MINILM_MODULES", ("numpy", "kg_no_such_tokenizers"))
    assert factory.minilm_available() is False


@pytest.mark.parametrize("name", ["bert", "openai-compatible"])
def test_unknown_name_lists_valid_ones(name: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        provider_from_config(env={"KG_EMBEDDER": name})
    message = str(caught.value)
    assert repr(name) in message
    for valid in ("auto", "minilm", "hashing", "openai"):
        assert valid in message


@pytest.mark.parametrize("raw", ["zero", "0", "-5"])
def test_bad_dimensions(raw: str) -> None:
    with pytest.raises(ConfigurationError, match="KG_EMBEDDER_DIMENSIONS"):
        provider_from_config("hashing", env={"KG_EMBEDDER_DIMENSIONS": raw})


def test_the_factory_names_the_same_model_package_as_the_provider() -> None:
    assert factory.MODEL_PACKAGE == minilm.MODEL_PACKAGE


def test_importing_the_package_or_choosing_hashing_loads_neither_httpx_nor_numpy() -> None:
    # Both cost ~0.1 s of every kg command's start; numpy loads when something is embedded.
    code = (
        "import sys; from kg.embeddings import provider_from_config; "
        "p = provider_from_config(env={'KG_EMBEDDER': 'hashing'}); "
        "print('httpx' in sys.modules, 'numpy' in sys.modules); "
        "p.embed(['x']); print('numpy' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.split() == ["False", "False", "True"]
