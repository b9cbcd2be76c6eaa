"""The OpenAI-compatible client against a real local HTTP server (see openai_stub.py)."""

from __future__ import annotations

import socket

import httpx
import numpy as np
import pytest

from kg.embeddings import OpenAICompatibleEmbedder
from kg.errors import EmbeddingError

from .openai_stub import STUB_DIMENSIONS, StubServer, stub_vector

API_KEY = "sk-test-secret-key-0123456789"


def _normalised(text: str) -> list[float]:
    vector = np.array(stub_vector(text))
    result: list[float] = (vector / np.linalg.norm(vector)).tolist()
    return result


def test_embeds_in_input_order_and_normalises() -> None:
    texts = [f"text number {i}" for i in range(10)]
    with (
        StubServer() as stub,
        OpenAICompatibleEmbedder(stub.base_url, "stub-model", api_key=API_KEY) as embedder,
    ):
        # The stub really does answer out of order, so the client must sort by index.
        raw = httpx.post(f"{stub.base_url}/embeddings", json={"model": "m", "input": texts})
        assert [item["index"] for item in raw.json()["data"]] != list(range(10))

        vectors = np.array(embedder.embed(texts))

        assert embedder.model_id == "openai:stub-model"
        assert embedder.dimensions == STUB_DIMENSIONS
        assert embedder.is_fallback is False
        assert np.allclose(vectors, [_normalised(t) for t in texts])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
        request = stub.requests[-1]
        assert request.path == "/v1/embeddings"
        assert request.body == {"model": "stub-model", "input": texts}
        assert request.authorization == f"Bearer {API_KEY}"


def test_batches_requests() -> None:
    texts = [f"paragraph {i}" for i in range(300)]
    with (
        StubServer() as stub,
        OpenAICompatibleEmbedder(stub.base_url, "stub-model", batch_size=128) as embedder,
    ):
        vectors = embedder.embed(texts)
        assert [len(r.body["input"]) for r in stub.requests] == [128, 128, 44]
        assert stub.requests[0].authorization is None
    assert np.allclose(vectors, [_normalised(t) for t in texts])


def test_accepts_the_full_endpoint_url_too() -> None:
    with StubServer() as stub:
        embedder = OpenAICompatibleEmbedder(f"{stub.base_url}/embeddings/", "stub-model")
        assert embedder.url == f"{stub.base_url}/embeddings"
        assert len(embedder.embed(["x"])) == 1
        embedder.close()


def test_dimensions_are_learned_from_the_server_when_not_configured() -> None:
    with StubServer(dimensions=24) as stub:
        embedder = OpenAICompatibleEmbedder(stub.base_url, "stub-model")
        assert embedder.dimensions == 24
        assert len(stub.requests) == 1  # one probe, then remembered
        assert embedder.dimensions == 24
        assert len(stub.requests) == 1
        embedder.close()


def test_configured_dimensions_are_requested_and_checked() -> None:
    with StubServer() as stub:
        with OpenAICompatibleEmbedder(stub.base_url, "stub-model", dimensions=8) as embedder:
            assert [len(v) for v in embedder.embed(["a", "b"])] == [8, 8]
            assert stub.requests[-1].body["dimensions"] == 8
        # A server that ignores the field answers at full size: that must not pass silently.
        fixed_url = stub.base_url.replace("/v1", "/fixed/v1")
        with (
            OpenAICompatibleEmbedder(fixed_url, "stub-model", dimensions=384) as embedder,
            pytest.raises(EmbeddingError, match="16-dimensional vectors, expected 384"),
        ):
            embedder.embed(["hello"])


def _assert_error_names_url_not_key(base_url: str, match: str) -> None:
    embedder = OpenAICompatibleEmbedder(base_url, "stub-model", api_key=API_KEY, timeout=5.0)
    with embedder, pytest.raises(EmbeddingError, match=match) as caught:
        embedder.embed(["hello", "world"])
    message = str(caught.value)
    assert f"{base_url}/embeddings" in message
    assert API_KEY not in message


def test_http_500_is_an_embedding_error() -> None:
    with StubServer() as stub:
        _assert_error_names_url_not_key(stub.base_url.replace("/v1", "/status500/v1"), "HTTP 500")


def test_malformed_json_is_an_embedding_error() -> None:
    with StubServer() as stub:
        _assert_error_names_url_not_key(stub.base_url.replace("/v1", "/garbage/v1"), "not JSON")


def test_refused_connection_is_an_embedding_error() -> None:
    with socket.socket() as sock:  # reserve a free port, then close it: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    _assert_error_names_url_not_key(f"http://127.0.0.1:{port}/v1", "ConnectError")


def test_missing_vectors_are_an_embedding_error() -> None:
    with StubServer() as stub:
        _assert_error_names_url_not_key(
            stub.base_url.replace("/v1", "/short/v1"), "expected 'data' with 2 items, got 1"
        )


def test_http_404_is_an_embedding_error_with_a_hint() -> None:
    # A base URL missing its /v1 is the usual cause.
    with StubServer() as stub:
        _assert_error_names_url_not_key(stub.base_url.removesuffix("/v1"), "HTTP 404.*/v1")
