"""Nodes projected while the embedder is unavailable wait for their vectors, and the catch-up
gives them exactly the vectors a projection with the embedder up would have (issue 30, item 5).
The embedder is a real OpenAI-compatible HTTP server (tests/embeddings/openai_stub.py)."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.embeddings import HashingEmbedder, OpenAICompatibleEmbedder
from kg.embeddings.cache import check_index_model
from kg.errors import EmbeddingError
from kg.events import EventStore, NodeAsserted
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.projections.digest import table_digest
from kg.projections.embedding_backlog import embed_waiting
from tests.embeddings.openai_stub import StubServer
from tests.mcp.client import free_port

LONG = "\n\n".join(f"Paragraph {i} about retries, backoff and idempotency keys." for i in range(60))


def _events() -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id="section:a.md#retries", node_type="Section", name="Retries",
                     content=LONG, properties={"path": "a.md", "headings": ["A", "Retries"]}),
        NodeAsserted(node_id="decision:d1", node_type="Decision", name="Use idempotency keys"),
    ]  # fmt: skip


async def _waiting(pool: asyncpg.Pool) -> tuple[int, int]:
    nodes = await pool.fetchval("SELECT count(*) FROM kg_nodes WHERE embedding IS NULL")
    passages = await pool.fetchval("SELECT count(*) FROM kg_passages WHERE embedding IS NULL")
    return int(nodes), int(passages)


async def test_waiting_nodes_and_passages_get_the_vectors_a_projection_would_have_given(
    store: EventStore, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    port = free_port()
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "stub-model")
    ctx = ProjectionContext(embedder)
    runner = ProjectionRunner(system_pool, default_projections(), ctx)
    await store.append(scope, "s", _events())

    assert await runner.catch_up() == 2, "projected although the embedder is down"
    assert ctx.embedding_problem is not None and "Connection refused" in ctx.embedding_problem
    passages = await system_pool.fetchval("SELECT count(*) FROM kg_passages")
    assert passages > 1 and await _waiting(system_pool) == (2, passages)
    down = await embed_waiting(system_pool, ctx, scope)
    assert (down.embedded, down.waiting) == (0, 2) and "openai:stub-model" in (down.warning() or "")

    with StubServer(port=port) as stub:
        ctx.note_available()  # the rest after a failure is for one process's next seconds
        back = await embed_waiting(system_pool, ctx, scope)
        assert (back.waiting, back.problem, back.warning()) == (0, None, None)
        # the passages and the decision (the long section's own text is its first passage's)
        assert back.embedded == passages + 1
        assert await _waiting(system_pool) == (0, 0)
        filled = await table_digest(system_pool, "kg_nodes")
        # The same rows, vectors included, as projecting with the embedder up gives.
        await runner.rebuild()
        assert await table_digest(system_pool, "kg_nodes") == filled
        asked = len(stub.requests)
        assert (await embed_waiting(system_pool, ctx, scope)).embedded == 0
        assert len(stub.requests) == asked, "nothing waits: the embedder is not asked"
    embedder.close()


async def test_after_a_failure_the_embedder_rests_instead_of_failing_every_batch(
    store: EventStore, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    port = free_port()
    embedder = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "stub-model")
    ctx = ProjectionContext(embedder)
    runner = ProjectionRunner(system_pool, default_projections(), ctx)
    await store.append(scope, "s", _events()[:1])
    await runner.catch_up()
    assert ctx.embedder_resting()
    with StubServer(port=port) as stub:
        await store.append(scope, "s", _events()[1:])
        await runner.catch_up()
        assert stub.requests == [], "resting: projected without asking"
        assert await _waiting(system_pool) == (2, await system_pool.fetchval(
            "SELECT count(*) FROM kg_passages"))  # fmt: skip
    embedder.close()


async def test_a_model_too_large_for_the_hnsw_index_is_refused_naming_the_setting(
    system_pool: asyncpg.Pool,
) -> None:
    async with system_pool.acquire() as conn:
        with pytest.raises(EmbeddingError, match=r"at most 2000.*KG_EMBEDDER_DIMENSIONS"):
            await check_index_model(conn, HashingEmbedder(3072))
        assert await conn.fetchval("SELECT count(*) FROM kg_embedding_index") == 0
