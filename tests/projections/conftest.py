from __future__ import annotations

from collections.abc import Sequence

import asyncpg
import pytest

from kg.embeddings import HashingEmbedder
from kg.projections import ProjectionContext, ProjectionRunner, default_projections


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return super().embed(texts)


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def runner(system_pool: asyncpg.Pool, embedder: CountingEmbedder) -> ProjectionRunner:
    return ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(embedder), batch_size=50
    )
