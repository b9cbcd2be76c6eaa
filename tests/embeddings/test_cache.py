"""The embedding cache stores each vector at float4 precision, to the last bit."""

from __future__ import annotations

import asyncpg
import numpy as np

from kg.embeddings import HashingEmbedder
from kg.embeddings.cache import EMBED_CHUNK, ensure_cached


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
