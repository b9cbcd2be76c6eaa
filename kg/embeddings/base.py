"""The embedding provider interface shared by every implementation.

A provider turns a batch of texts into L2-normalised vectors, so cosine similarity is a plain
dot product wherever the vectors end up (pgvector, numpy). ``model_id`` is stored next to every
vector and used as a cache key: vectors from different models must never be compared.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from kg.errors import ConfigurationError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DEFAULT_DIMENSIONS = 384
"""All bundled providers produce 384-dimensional vectors (the size of MiniLM-L6)."""


class EmbeddingProvider(Protocol):
    """Something that embeds texts into L2-normalised vectors of a fixed dimension.

    The three attributes are read-only properties here so that implementations may use plain
    attributes or compute them (the OpenAI-compatible client learns its size from the server).
    """

    @property
    def model_id(self) -> str:
        """Stable id stored next to the vectors and used as the cache key."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector returned by :meth:`embed`."""
        ...

    @property
    def is_fallback(self) -> bool:
        """True only for the lexical hashing embedder: callers announce it loudly."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts`` in one batch; one unit-norm vector per text, in input order."""
        ...


class DeferredEmbedder:
    """An :class:`EmbeddingProvider` that builds the real one (``build``) the first time it
    is used: a command that projects nothing new (a full-text query, an anchor build, every
    non-semantic tool) then never constructs the embedder, whatever it is configured to be."""

    def __init__(self, build: Callable[[], EmbeddingProvider]) -> None:
        self._build = build
        self._provider: EmbeddingProvider | None = None

    @property
    def provider(self) -> EmbeddingProvider:
        if self._provider is None:
            self._provider = self._build()
        return self._provider

    @property
    def model_id(self) -> str:
        return self.provider.model_id

    @property
    def dimensions(self) -> int:
        return self.provider.dimensions

    @property
    def is_fallback(self) -> bool:
        return self.provider.is_fallback

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.provider.embed(texts)


def content_hash(text: str) -> str:
    """Return the sha256 hex digest of ``text`` encoded as UTF-8 (the embedding cache key)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def l2_normalise(matrix: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Scale each row of ``matrix`` to unit length; all-zero rows are left as they are."""
    import numpy as np  # not at module level: only embedding needs it

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    normalised: npt.NDArray[np.float64] = matrix / norms
    return normalised


def positive_int_setting(env: Mapping[str, str], name: str, unset_means: str) -> int | None:
    """The positive integer an environment setting holds, or None when it is unset or blank.

    Raises:
        ConfigurationError: the setting holds anything else; the message says what unsetting it
            means (``unset_means``).
    """
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigurationError(
            f"{name}={raw!r} is not a positive integer; unset it to {unset_means}."
        )
    return value
