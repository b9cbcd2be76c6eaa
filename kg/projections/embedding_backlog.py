"""Nodes that wait for their vectors, and the catch-up that gives them.

When the embedder is unavailable (down, failing, or not the model the index holds), the nodes
projection projects nodes all the same, without vectors (:func:`kg.projections.nodes.
embed_or_degrade`): full-text search and every non-semantic read keep working. Such a node
waits: its ``embedding`` (or one of its passages') is NULL, which the partial indexes of
migration 0019 find in a few pages. ``kg status`` counts them, a semantic build says how many
vector search cannot see, and :func:`embed_waiting` (run by every ``kg ingest`` and ``kg sync``)
embeds them once the embedder answers again. It re-derives each node's texts from its projected
row: the same texts, so the same content hashes, as the projection computes from the event.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson

from kg.breadcrumbs import breadcrumb
from kg.config import Scope
from kg.embeddings.base import content_hash
from kg.embeddings.cache import check_index_model, embedding_text, ensure_cached, passage_texts
from kg.errors import EmbeddingError
from kg.projections.base import ProjectionContext

BATCH = 500
"""Waiting nodes embedded per transaction."""
CHUNK = 64
"""Texts per call to the embedder, each chunk's vectors committed to the cache as it comes:
Ctrl-C waits for at most one chunk (~2 s of MiniLM on two cores) and loses none before it."""

_WAITING_IDS = """
SELECT node_id FROM kg_nodes
 WHERE tenant_id = $1 AND project_id = $2 AND embedding IS NULL
UNION
SELECT node_id FROM kg_passages
 WHERE tenant_id = $1 AND project_id = $2 AND embedding IS NULL
"""

_COUNT = f"SELECT count(*) FROM ({_WAITING_IDS}) w"

# The distinct texts the waiting rows lack (a row took its vector if the cache had it when it
# was projected): what the catch-up will embed, for a progress total.
_TEXTS = """
SELECT count(DISTINCT content_hash) FROM (
    SELECT content_hash FROM kg_nodes
     WHERE tenant_id = $1 AND project_id = $2 AND embedding IS NULL
    UNION ALL
    SELECT content_hash FROM kg_passages
     WHERE tenant_id = $1 AND project_id = $2 AND embedding IS NULL) w
"""

_STATE = f"""
SELECT (SELECT model_id FROM kg_embedding_index WHERE id = 1) AS model,
       (SELECT count(*) FROM ({_WAITING_IDS}) w) AS waiting
"""

_ROWS = f"""
SELECT n.node_id, n.name, n.content, n.properties::text AS properties
  FROM kg_nodes n
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id > $3
   AND n.node_id IN ({_WAITING_IDS})
 ORDER BY n.node_id
 LIMIT $4
"""

_FILL_NODES = """
UPDATE kg_nodes n SET embedding = ec.embedding
  FROM embedding_cache ec
 WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = ANY($4::text[])
   AND n.embedding IS NULL AND ec.model_id = $3 AND ec.content_hash = n.content_hash
"""

_FILL_PASSAGES = """
UPDATE kg_passages p SET embedding = ec.embedding
  FROM embedding_cache ec
 WHERE p.tenant_id = $1 AND p.project_id = $2 AND p.node_id = ANY($4::text[])
   AND p.embedding IS NULL AND ec.model_id = $3 AND ec.content_hash = p.content_hash
"""


@dataclass(frozen=True)
class EmbeddingState:
    """The model the index holds vectors of (None: none yet), and how many nodes of a project
    wait for a vector."""

    index_model: str | None
    waiting: int


async def embedding_state(conn: asyncpg.Connection, scope: Scope) -> EmbeddingState:
    """One round trip (two index probes; both indexes are empty when nothing waits)."""
    row = await conn.fetchrow(_STATE, scope.tenant_id, scope.project_id)
    assert row is not None
    return EmbeddingState(row["model"], int(row["waiting"]))


async def count_waiting(conn: asyncpg.Connection, scope: Scope) -> int:
    return int(await conn.fetchval(_COUNT, scope.tenant_id, scope.project_id))


async def texts_waiting(conn: asyncpg.Connection, scope: Scope) -> int:
    """How many distinct texts the scope's waiting nodes and passages lack (an upper bound of
    what :func:`embed_waiting` embeds: another process may cache some meanwhile)."""
    return int(await conn.fetchval(_TEXTS, scope.tenant_id, scope.project_id))


@dataclass(frozen=True)
class Backlog:
    """What :func:`embed_waiting` found: nodes embedded, nodes still waiting, and why."""

    embedded: int
    waiting: int
    problem: str | None = None

    def warning(self) -> str | None:
        """The line a command prints when nodes still wait (None when none does)."""
        if not self.waiting:
            return None
        why = (self.problem or "the embedder was unavailable when they were projected").rstrip(".")
        return (
            f"{self.waiting} node(s) wait for an embedding: {why}. Full-text search and "
            "non-semantic builds see them; vector search does not yet. The next `kg ingest` or "
            "`kg sync` embeds them once the embedder answers (`kg status` counts them)"
        )


def texts_of(row: asyncpg.Record) -> dict[str, str]:
    """A projected node's embedding texts (its own, its passages') by content hash."""
    properties: dict[str, Any] = orjson.loads(row["properties"] or "{}") or {}
    place = breadcrumb(row["node_id"], row["name"], properties)
    text = embedding_text(row["name"], row["content"], place)
    texts = {content_hash(text): text}
    for passage in passage_texts(row["name"], row["content"], place):
        texts[content_hash(passage)] = passage
    return texts


async def embed_waiting(
    pool: asyncpg.Pool, ctx: ProjectionContext, scope: Scope, *, batch: int = BATCH
) -> Backlog:
    """Embed the scope's waiting nodes (and passages) with the configured embedder, a batch of
    nodes at a time; nothing is asked of the embedder when none waits (one index probe). A
    batch's texts are embedded longest first, :data:`CHUNK` at a time, and after each chunk
    one short transaction caches its vectors and gives the rows whose texts are now cached
    theirs: an interruption (Ctrl-C) loses at most the chunk in flight, and the rows filled so
    far no longer wait. An embedder still unavailable stops the catch-up: what was done stays
    done."""
    args = (scope.tenant_id, scope.project_id)
    async with pool.acquire() as conn:
        if not await count_waiting(conn, scope):
            return Backlog(0, 0)
        embedded_before, after = ctx.embedded, ""
        if not ctx.embedder_resting():
            while rows := await conn.fetch(_ROWS, *args, after, batch):
                texts: dict[str, str] = {}
                for row in rows:
                    texts.update(texts_of(row))
                ids = [r["node_id"] for r in rows]
                try:
                    await check_index_model(conn, ctx.embedder)
                    await _embed_and_fill(conn, ctx, args, texts, ids)
                except EmbeddingError as error:
                    ctx.note_unavailable(error)
                    break
                ctx.note_available()
                after = ids[-1]
        waiting = await count_waiting(conn, scope)
    return Backlog(ctx.embedded - embedded_before, waiting, ctx.embedding_problem)


async def _embed_and_fill(
    conn: asyncpg.Connection,
    ctx: ProjectionContext,
    args: tuple[str, str],
    texts: dict[str, str],
    ids: list[str],
) -> None:
    """Embed ``texts`` (longest first: little padding in the model's batches) a chunk at a
    time, filling the waiting rows of ``ids`` after each (the rows whose texts are all cached
    by then take their vectors; an UPDATE that finds none writes nothing)."""
    order = sorted(texts, key=lambda h: -len(texts[h]))
    model = ctx.embedder.model_id
    for start in range(0, len(order), CHUNK):
        part = {h: texts[h] for h in order[start : start + CHUNK]}
        async with conn.transaction():
            await check_index_model(conn, ctx.embedder)
            await ensure_cached(
                conn, ctx.embedder, part, on_embedded=ctx.note_embedded, chunk=CHUNK
            )
            await conn.execute(_FILL_NODES, *args, model, ids)
            await conn.execute(_FILL_PASSAGES, *args, model, ids)
