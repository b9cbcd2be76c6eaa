"""MiniLM through sentence-transformers, with the real packaged model, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kg.embeddings import SentenceTransformerEmbedder, sentence
from kg.errors import EmbeddingError

PARAPHRASES = ["How do I reset my password?", "I forgot my password and need to change it"]
UNRELATED = "The weather in Lisbon is sunny today"


def test_identity() -> None:
    embedder = SentenceTransformerEmbedder()
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    assert embedder.is_fallback is False


def test_paraphrase_ranks_above_unrelated_sentence() -> None:
    query, paraphrase, unrelated = np.array(
        SentenceTransformerEmbedder().embed([*PARAPHRASES, UNRELATED])
    )
    assert query.shape == (384,)
    assert query @ paraphrase > query @ unrelated + 0.3


def test_vectors_are_normalised_and_in_input_order() -> None:
    embedder = SentenceTransformerEmbedder()
    together = np.array(embedder.embed([UNRELATED, *PARAPHRASES]))
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-9)
    alone = np.array(embedder.embed([PARAPHRASES[1]]))
    assert np.allclose(together[2], alone[0], atol=1e-5)
    assert embedder.embed([]) == []


def test_model_is_loaded_once_per_process() -> None:
    first, second = SentenceTransformerEmbedder(), SentenceTransformerEmbedder()
    first.embed(["warm up"])
    assert first.model() is second.model()
    assert len(sentence._MODELS) == 1


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, kg.embeddings; "
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.split() == ["False", "False"]


def test_missing_model_is_an_embedding_error_with_the_install_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sentence, "MODEL_PACKAGE", "kg_no_such_model_package")
    with pytest.raises(EmbeddingError, match=r"pip install -e \.\[semantic\]"):
        SentenceTransformerEmbedder().embed(["text"])


def test_broken_model_directory_is_an_embedding_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="could not load the model"):
        SentenceTransformerEmbedder(model_path=tmp_path).embed(["text"])
