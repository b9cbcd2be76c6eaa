"""Embeddings from any server that speaks OpenAI's ``POST /embeddings`` (OpenAI, Ollama's /v1).

Requests are ``{"model": ..., "input": [...]}``, plus ``"dimensions"`` when configured, in
batches of ``batch_size``; the ``data`` of each response is put back in input order by its
``index`` and L2-normalised here, because not every server normalises. Error messages name the
URL but never the API key, which is also scrubbed from any server text quoted back.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np

from kg.errors import ConfigurationError, EmbeddingError

from .base import l2_normalise

_BODY_EXCERPT = 300
"""Characters of an error response body quoted in the message."""

_API_HINT = "Check that KG_EMBEDDER_URL points at an OpenAI-compatible API (usually .../v1)."


class OpenAICompatibleEmbedder:
    """Client for an OpenAI-compatible embeddings endpoint; see the module docstring.

    ``dimensions``, when given, is sent with every request (OpenAI's text-embedding-3 models
    then shorten their vectors to it; servers that ignore the field answer at full size) and
    every response is checked against it. When it is None the size is learned from the first
    response, and reading :attr:`dimensions` before any call embeds a probe text to find it.
    """

    is_fallback: bool = False

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        batch_size: int = 128,
    ) -> None:
        if not base_url or not model:
            raise ConfigurationError(
                "OpenAI-compatible embedder needs a base URL and a model, e.g. "
                "KG_EMBEDDER_URL=http://localhost:11434/v1 KG_EMBEDDER_MODEL=nomic-embed-text."
            )
        if batch_size < 1:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        if dimensions is not None and dimensions < 1:
            raise ConfigurationError(f"dimensions must be positive, got {dimensions}")
        base = base_url.rstrip("/")
        # Tolerate a full endpoint URL as well as the usual base URL ending in /v1.
        self.url = base if base.endswith("/embeddings") else base + "/embeddings"
        self.model = model
        self.model_id: str = f"openai:{model}"
        self.batch_size = batch_size
        self._dimensions = dimensions
        self._requested_dimensions = dimensions
        self._api_key = api_key
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)

    @property
    def dimensions(self) -> int:
        """Size of the vectors; asks the server once if it was not configured."""
        if self._dimensions is None:
            self.embed(["dimension probe"])
        assert self._dimensions is not None  # set by the successful embed above
        return self._dimensions

    def close(self) -> None:
        """Close the pooled HTTP connections."""
        self._client.close()

    def __enter__(self) -> OpenAICompatibleEmbedder:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in batches: one unit-norm vector per text, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._embed_batch(list(texts[start : start + self.batch_size])))
        return vectors

    def _fail(self, problem: str, hint: str) -> EmbeddingError:
        """Build the error for ``problem``, naming the URL and scrubbing the API key."""
        message = f"embedder {self.model_id} at {self.url}: {problem}. {hint}"
        if self._api_key:
            message = message.replace(self._api_key, "***")
        return EmbeddingError(message)

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self._requested_dimensions is not None:
            body["dimensions"] = self._requested_dimensions
        payload = self._post(body)
        rows = self._parse(payload, len(batch))
        matrix = np.asarray(rows, dtype=np.float64)
        if not np.isfinite(matrix).all() or not matrix.any(axis=1).all():
            raise self._fail(
                "the server returned a vector that is zero or not finite",
                "Check that the model is an embedding model.",
            )
        result: list[list[float]] = l2_normalise(matrix).tolist()
        return result

    def _post(self, body: dict[str, Any]) -> Any:
        try:
            response = self._client.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise self._fail(
                f"no answer in time ({type(exc).__name__})",
                "Check that the server is up and not overloaded, or lower the batch size.",
            ) from exc
        except httpx.HTTPError as exc:
            raise self._fail(
                f"request failed ({type(exc).__name__}: {exc})",
                "Check that the server is running and that KG_EMBEDDER_URL is right "
                "(it usually ends in /v1).",
            ) from exc
        if response.status_code >= 400:
            raise self._fail(
                f"HTTP {response.status_code}: {response.text[:_BODY_EXCERPT]!r}",
                _status_hint(response.status_code),
            )
        try:
            return response.json()
        except ValueError as exc:
            raise self._fail(
                f"the response is not JSON: {response.text[:_BODY_EXCERPT]!r}",
                _API_HINT,
            ) from exc

    def _parse(self, payload: Any, expected: int) -> list[list[float]]:
        """Check the response shape and return the vectors in input order."""
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or len(data) != expected:
            got = f"{len(data)} items" if isinstance(data, list) else "no 'data' list"
            raise self._fail(
                f"malformed response: expected 'data' with {expected} items, got {got}",
                _API_HINT,
            )
        if not all(isinstance(item, dict) for item in data):
            raise self._fail("malformed response: 'data' items are not objects", _API_HINT)
        indices = [item.get("index") for item in data]
        if all(index is None for index in indices):
            ordered = data  # some servers omit the index and answer in input order
        elif sorted(i for i in indices if isinstance(i, int)) == list(range(expected)):
            ordered = sorted(data, key=lambda item: int(item["index"]))
        else:
            raise self._fail(
                f"malformed response: indices {indices[:10]} are not 0..{expected - 1}", _API_HINT
            )
        vectors: list[list[float]] = []
        for item in ordered:
            vector = item.get("embedding")
            if not isinstance(vector, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in vector
            ):
                raise self._fail(
                    "malformed response: an 'embedding' is not a list of numbers", _API_HINT
                )
            vectors.append([float(x) for x in vector])
        sizes = {len(v) for v in vectors}
        if len(sizes) != 1 or 0 in sizes:
            raise self._fail(f"vectors have inconsistent sizes {sorted(sizes)}", _API_HINT)
        (size,) = sizes
        if self._dimensions is None:
            self._dimensions = size
        elif size != self._dimensions:
            raise self._fail(
                f"the model returned {size}-dimensional vectors, expected {self._dimensions}",
                "The server ignored the requested size or the model cannot give it: set "
                "KG_EMBEDDER_DIMENSIONS to the model's own size, or use a model that supports "
                "shortening (e.g. text-embedding-3-small).",
            )
        return vectors


def _status_hint(status: int) -> str:
    if status in (401, 403):
        return "Check KG_EMBEDDER_API_KEY."
    if status == 404:
        return (
            "Check KG_EMBEDDER_URL (usually ends in /v1) and that KG_EMBEDDER_MODEL exists "
            "on the server (for Ollama: `ollama pull MODEL`)."
        )
    if status == 429:
        return "The server is rate limiting: retry later or lower the batch size."
    if status >= 500:
        return "The server failed: check its logs, then retry."
    return "Check KG_EMBEDDER_MODEL and the server's documentation."
