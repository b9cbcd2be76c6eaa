"""The hashing fallback: deterministic everywhere, unit norm, and lexically meaningful."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from kg.embeddings import HashingEmbedder, content_hash
from kg.errors import ConfigurationError

TEXTS = [
    "The projection rebuilds the node table from the event log.",
    "Policies filter the context graph before an agent sees it.",
    "",
    "Ünïcode wörds and snake_case_identifiers 42",
]


def test_same_vectors_across_calls_and_instances() -> None:
    first = HashingEmbedder().embed(TEXTS)
    assert HashingEmbedder().embed(TEXTS) == first
    # Batch composition must not matter: each text alone gives the same vector.
    assert [HashingEmbedder().embed([t])[0] for t in TEXTS] == first


def test_same_vectors_in_another_process() -> None:
    # A fresh interpreter gets a different PYTHONHASHSEED, so this catches any use of hash().
    code = (
        "import json, sys; from kg.embeddings import HashingEmbedder; "
        "print(json.dumps(HashingEmbedder().embed(json.loads(sys.stdin.read()))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(TEXTS),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert json.loads(result.stdout) == HashingEmbedder().embed(TEXTS)


def test_unit_norm_and_dimensions() -> None:
    for dims in (384, 64):
        embedder = HashingEmbedder(dims)
        vectors = np.array(embedder.embed(TEXTS))
        assert vectors.shape == (len(TEXTS), dims)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
        assert embedder.model_id == f"hashing-v1-{dims}"
        assert embedder.is_fallback is True


def test_texts_without_words_get_one_fixed_unit_vector() -> None:
    empty, punctuation, word = np.array(HashingEmbedder().embed(["", "  !?  ", "word"]))
    assert np.array_equal(empty, punctuation)
    assert np.isclose(np.linalg.norm(empty), 1.0)
    assert not np.array_equal(empty, word)


def test_near_duplicate_is_closer_than_unrelated_text() -> None:
    base, near, unrelated = np.array(
        HashingEmbedder().embed(
            [
                "Append the event to the stream and update the projection",
                "Append the event to a stream, then update the projections.",
                "The weather in Lisbon is sunny today",
            ]
        )
    )
    assert base @ near > 0.7
    assert base @ near > base @ unrelated + 0.3


def test_trigrams_make_misspellings_overlap() -> None:
    colour, color, other = np.array(HashingEmbedder().embed(["colour", "color", "banana"]))
    assert colour @ color > 0.2
    assert colour @ color > colour @ other + 0.1


def test_empty_batch_and_bad_arguments() -> None:
    assert HashingEmbedder().embed([]) == []
    with pytest.raises(TypeError):
        HashingEmbedder().embed("a single string")
    with pytest.raises(ConfigurationError, match="positive"):
        HashingEmbedder(0)


def test_content_hash_is_sha256_of_utf8() -> None:
    assert content_hash("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert content_hash("é") == hashlib.sha256(b"\xc3\xa9").hexdigest()
    assert content_hash("é") != hashlib.sha256(b"\xe9").hexdigest()  # not Latin-1
