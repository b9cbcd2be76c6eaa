"""The embedding cache stores each vector at float4 precision, to the last bit."""

from __future__ import annotations

import asyncpg
import numpy as np
import pytest

from kg.embeddings import HashingEmbedder
from kg.embeddings.cache import EMBED_CHUNK, ensure_cached
from kg.errors import EmbeddingError


async def _stored(pool: asyncpg.Pool, hashes: list[str]) -> list[list[float]]:
    rows = await pool.fetch(
        "SELECT content_hash, embedding::real[] AS v FROM embedding_cache "
        "WHERE content_hash = ANY($1)",
        hashes,
    )
    by_hash = {r["content_hash"]: list(r["v"]) for r in rows}
    return [by_hash[h] for h in hashes]


async def test_a_small_batch_and_a_large_one_store_the_float32_of_each_vector(
    system_pool: asyncpg.Pool,
) -> None:
    embedder = HashingEmbedder()
    for count in (3, EMBED_CHUNK + 37):  # one call to the embedder, then two
        texts = {f"h{count}-{i}": f"text {i} of batch {count}: the total of order {i}" for i in
                 range(count)}  # fmt: skip
        async with system_pool.acquire() as conn:
            embedded = await ensure_cached(conn, embedder, texts)
        assert embedded == count
        hashes = list(texts)
        expected = np.asarray(embedder.embed([texts[h] for h in hashes]), dtype=np.float32)
        stored = np.asarray(await _stored(system_pool, hashes), dtype=np.float32)
        assert stored.shape == (count, 384)
        assert np.array_equal(stored, expected), "row i holds vector i, to the last bit"


class _Fixed:
    """An embedder that returns given vectors: the numbers a decimal form gets wrong first."""

    model_id = "fixed-test-384"
    dimensions = 384
    is_fallback = False

    def __init__(self, vectors: list[list[float]]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.vectors[: len(texts)]


async def test_hard_numbers_keep_every_bit_of_their_float4(system_pool: asyncpg.Pool) -> None:
    tiny = float(np.nextafter(np.float32(0), np.float32(1)))  # the smallest float4 (denormal)
    huge = float(np.finfo(np.float32).max)
    rng = np.random.default_rng(20)
    hard = [tiny, -tiny, huge, -huge, -0.0, 1 / 3, 0.1, 16777217.0, 1.17549435e-38]
    first = (hard + [0.0] * 384)[:384]
    rest = rng.standard_normal((2, 384)) * np.array([1e-30, 1e30])[:, None]  # 9 digits each
    vectors = [first, *rest.tolist()]
    texts = {f"hard-{i}": f"hard {i}" for i in range(3)}
    async with system_pool.acquire() as conn:
        assert await ensure_cached(conn, _Fixed(vectors), texts) == 3
    stored = np.asarray(await _stored(system_pool, list(texts)), dtype=np.float32)
    expected = np.asarray(vectors, dtype=np.float32)
    assert stored.tobytes() == expected.tobytes(), "every bit of every float4, -0.0 included"


async def test_a_vector_with_nan_is_refused_with_the_reason(system_pool: asyncpg.Pool) -> None:
    bad = [[float("nan")] + [0.0] * 383]
    async with system_pool.acquire() as conn:
        with pytest.raises(EmbeddingError, match="NaN or infinite"):
            await ensure_cached(conn, _Fixed(bad), {"nan-1": "nan"})
