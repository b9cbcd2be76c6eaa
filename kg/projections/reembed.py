"""What a rebuild of ``kg_nodes`` will cost in embeddings, told before it starts.

A rebuild with the model the index already holds takes every vector from the cache. With
another model (``KG_EMBEDDER`` changed, or a model of another size) it embeds every text again:
:func:`reembed_cost` counts those texts (the node and passage texts the cache has no vector of
for the configured model) and times the embedder on a sample of them, so ``kg projections
rebuild`` can show the cost and ask before spending it. It also finds an embedder that does not
answer: a rebuild then would leave every node without its vector, so the command refuses.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import asyncpg

from kg.embeddings.base import EmbeddingProvider
from kg.embeddings.cache import index_model
from kg.projections.embedding_backlog import texts_of

SAMPLE = 32
"""Texts embedded (and thrown away) to measure the embedder's rate."""

_MISSING = """
SELECT count(*) FROM (SELECT content_hash FROM kg_nodes
                      UNION SELECT content_hash FROM kg_passages) h
 WHERE NOT EXISTS (SELECT 1 FROM embedding_cache ec
                    WHERE ec.model_id = $1 AND ec.content_hash = h.content_hash)
"""

_SAMPLE = """
SELECT node_id, name, content, properties::text AS properties FROM kg_nodes
 ORDER BY node_id LIMIT $1
"""


@dataclass(frozen=True)
class ReembedCost:
    """``texts`` to embed with ``model`` (the index holds ``indexed``), at ``rate`` texts a
    second as measured on ``sampled`` texts (None: nothing to embed, nothing measured)."""

    model: str
    indexed: str | None
    texts: int
    rate: float | None = None
    sampled: int = 0

    @property
    def changes_model(self) -> bool:
        return self.indexed is not None and self.indexed != self.model

    @property
    def seconds(self) -> float | None:
        return None if not self.rate else self.texts / self.rate

    def describe(self) -> str:
        change = (
            f"the index holds vectors of {self.indexed}; the configured embedder is {self.model}"
            if self.changes_model
            else f"embedder {self.model}"
        )
        text = f"{change}: rebuilding kg_nodes embeds {self.texts} text(s) not in the cache"
        if self.seconds is not None and self.rate is not None:
            text += (
                f", {_duration(self.seconds)} at {self.rate:.0f} texts/s (measured on "
                f"{self.sampled} of them just now; long texts take longer than the average)"
            )
        return text


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"


async def reembed_cost(pool: asyncpg.Pool, embedder: EmbeddingProvider) -> ReembedCost:
    """Count the texts a rebuild of ``kg_nodes`` embeds (every tenant: a rebuild is of the
    whole table) and measure the embedder on a sample of the graph's texts.

    Raises:
        EmbeddingError: the embedder does not answer (a rebuild would leave every node
            without its vector).
    """
    async with pool.acquire() as conn:
        indexed = await index_model(conn)
        texts = int(await conn.fetchval(_MISSING, embedder.model_id))
        rows = await conn.fetch(_SAMPLE, SAMPLE)
    sample = [t for row in rows for t in texts_of(row).values()][:SAMPLE] or ["probe"]
    await asyncio.to_thread(embedder.embed, sample[:1])  # loads a model, answers or fails
    if not texts:
        return ReembedCost(embedder.model_id, indexed, 0)
    start = time.perf_counter()
    await asyncio.to_thread(embedder.embed, sample)
    elapsed = max(time.perf_counter() - start, 1e-6)
    return ReembedCost(embedder.model_id, indexed, texts, len(sample) / elapsed, len(sample))
