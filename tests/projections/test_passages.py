"""kg_passages (migration 0011): a long node gets one vector per passage, derived like kg_nodes,
and the vector side of search finds an answer deep in a section through them."""

from __future__ import annotations

import asyncpg

from kg.config import Scope
from kg.embeddings.cache import query_vector
from kg.events import NodeAsserted, NodeRetired
from kg.projections import ProjectionRunner
from kg.runtime import Runtime
from kg.search import search

FILLER = " ".join(f"Paragraph {i} covers routine matters of item {i}." for i in range(60))
DEEP = "Refund requests older than ninety days are rejected by the ledger service."


def long_section(content: str) -> NodeAsserted:
    return NodeAsserted(
        node_id="section:docs/refunds.md#rules",
        node_type="Section",
        name="Rules",
        content=content,
        properties={"level": 2, "anchor": "rules", "path": ["Refunds"]},
    )


async def passages(pool: asyncpg.Pool) -> list[tuple[str, int]]:
    rows = await pool.fetch("SELECT node_id, ordinal FROM kg_passages ORDER BY 1, 2")
    return [(r["node_id"], r["ordinal"]) for r in rows]


async def test_long_nodes_get_passage_vectors_that_follow_the_node(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool
) -> None:
    short = NodeAsserted(
        node_id="section:docs/a.md#b",
        node_type="Section",
        name="Support",
        content="Refund requests are answered by the support team within a day.",
    )
    await runtime.store.append(scope, "s", [long_section(f"{FILLER}\n\n{DEEP}"), short])
    await runtime.catch_up()
    first = await passages(system_pool)
    assert len(first) >= 3 and {n for n, _ in first} == {"section:docs/refunds.md#rules"}
    assert (
        await system_pool.fetchval("SELECT count(*) FROM kg_passages WHERE embedding IS NULL") == 0
    )

    hits = await search(
        runtime.app_pool, scope, DEEP, mode="semantic", limit=1, embedder=runtime.embedder
    )
    assert hits.hits[0].node_id == "section:docs/refunds.md#rules"
    own = await system_pool.fetchval(
        "SELECT 1 - (embedding <=> $1::vector) FROM kg_nodes WHERE node_id = $2",
        await query_vector(runtime.embedder, DEEP),
        "section:docs/refunds.md#rules",
    )
    assert (hits.hits[0].similarity or 0) > own + 0.1, "found by its passage, not its own vector"

    await runtime.store.append(scope, "s", [long_section("now short")])
    await runtime.catch_up()
    assert await passages(system_pool) == []
    await runtime.store.append(scope, "s", [long_section(f"{FILLER}\n\n{DEEP}")])
    await runtime.store.append(scope, "s", [NodeRetired(node_id="section:docs/refunds.md#rules")])
    await runtime.catch_up()
    assert await passages(system_pool) == []


async def test_a_rebuild_reproduces_the_passages(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool, runner: ProjectionRunner
) -> None:
    await runtime.store.append(scope, "s", [long_section(f"{FILLER}\n\n{DEEP}")])
    await runner.catch_up()
    digest = "SELECT string_agg(t::text, ',' ORDER BY node_id, ordinal) FROM kg_passages t"
    before = await system_pool.fetchval(digest)
    await runner.rebuild()
    assert before and await system_pool.fetchval(digest) == before


async def test_a_long_node_is_embedded_once_its_own_vector_is_its_first_passages(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool
) -> None:
    """The start of a long node was embedded twice, as its own text and as its first passage
    (12 % of a real repository's word pieces, bench/RESULTS.md issue 34): one text now."""
    await runtime.store.append(scope, "s", [long_section(f"{FILLER}\n\n{DEEP}")])
    before = runtime.runner.ctx.embedded
    await runtime.catch_up()
    node = await system_pool.fetchrow(
        "SELECT content_hash, embedding::text AS v FROM kg_nodes WHERE node_id = $1",
        "section:docs/refunds.md#rules",
    )
    rows = await system_pool.fetch(
        "SELECT ordinal, content_hash, embedding::text AS v FROM kg_passages ORDER BY ordinal"
    )
    assert node is not None and len(rows) >= 3
    assert node["content_hash"] == rows[0]["content_hash"] and node["v"] == rows[0]["v"]
    assert runtime.runner.ctx.embedded - before == len(rows), "one text per passage, no more"
