"""Search over the projection: full-text, vector, hybrid; filters; scope; fallback warning."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.embeddings import HashingEmbedder, MiniLMEmbedder
from kg.embeddings.cache import query_vector
from kg.errors import ValidationError
from kg.events import EventStore, NodeAsserted
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.search import FALLBACK_WARNING, search

SENTENCES = {
    "decision:reset": ("Decision", "How do I reset my password?"),
    "decision:weather": ("Decision", "The weather in Lisbon is sunny today"),
    "adr:db": ("ADR", "We store events in PostgreSQL with an append-only table"),
    "component:auth": ("Component", "Authentication service handles login and credentials"),
}


async def project(store: EventStore, pool: asyncpg.Pool, scope: Scope, embedder: object) -> None:
    events = [
        NodeAsserted(node_id=node_id, node_type=t, name=text, content=text)
        for node_id, (t, text) in SENTENCES.items()
    ]
    await store.append(scope, "s", events)
    await ProjectionRunner(pool, default_projections(), ProjectionContext(embedder)).catch_up()  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


async def projected(
    store: EventStore, system_pool: asyncpg.Pool, scope: Scope, nodes: list[NodeAsserted]
) -> None:
    """Append ``nodes`` and project them (hashing embedder)."""
    await store.append(scope, "s", nodes)
    await ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(HashingEmbedder())
    ).catch_up()


async def test_semantic_search_ranks_a_paraphrase_above_an_unrelated_sentence(
    store: EventStore,
    system_pool: asyncpg.Pool,
    app_pool: asyncpg.Pool,
    scope: Scope,
    minilm: MiniLMEmbedder,
) -> None:
    await project(store, system_pool, scope, minilm)
    result = await search(
        app_pool,
        scope,
        "I forgot my password and need to change it",
        mode="semantic",
        embedder=minilm,
        limit=4,
    )
    ranked = [h.node_id for h in result.hits]
    assert ranked.index("decision:reset") < ranked.index("decision:weather")
    assert ranked[0] == "decision:reset"
    assert result.warnings == [] and result.embedder == minilm.model_id


async def test_fulltext_finds_words_and_filters_by_type(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    await project(store, system_pool, scope, HashingEmbedder())
    result = await search(app_pool, scope, "append-only PostgreSQL", mode="fulltext")
    assert [h.node_id for h in result.hits] == ["adr:db"]
    none = await search(app_pool, scope, "PostgreSQL", mode="fulltext", node_types=["Decision"])
    assert none.hits == []


async def test_hybrid_fuses_both_rankings_and_announces_the_fallback(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    hashing = HashingEmbedder()
    await project(store, system_pool, scope, hashing)
    result = await search(app_pool, scope, "login credentials", embedder=hashing, limit=3)
    top = result.hits[0]
    assert top.node_id == "component:auth"
    assert top.fulltext_rank == 1 and top.vector_rank == 1
    assert result.warnings == [FALLBACK_WARNING]


async def test_search_never_crosses_tenants(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool
) -> None:
    hashing = HashingEmbedder()
    await project(store, system_pool, Scope("a", "p"), hashing)
    result = await search(app_pool, Scope("b", "p"), "password", embedder=hashing)
    assert result.hits == []
    result = await search(app_pool, Scope("b", "p"), "password", mode="fulltext")
    assert result.hits == []
    assert (await search(app_pool, Scope("a", "p"), "password", mode="fulltext")).hits


async def test_the_fulltext_function_answers_only_for_the_sessions_tenant(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool
) -> None:
    """kg_fulltext_bm25 bypasses RLS to use the GIN index, so it must filter as RLS does: the
    tenant it is asked about must be the session's (migration 0018)."""
    await project(store, system_pool, Scope("a", "p"), HashingEmbedder())

    def query(tenant: str) -> str:
        return (
            f"SELECT node_id FROM kg_fulltext_bm25('{tenant}', 'p', ARRAY['password'], NULL, 10, "
            "100, 1000)"
        )

    async with app_pool.acquire() as conn, conn.transaction():
        assert await conn.fetch(query("a")) == [], "no tenant set: nothing"
        await conn.execute("SET LOCAL kg.tenant_id = 'b'")
        assert await conn.fetch(query("a")) == [], "another tenant's nodes: nothing"
        assert await conn.fetch(query("b")) == [], "its own tenant has no such node"
        await conn.execute("SET LOCAL kg.tenant_id = 'a'")
        assert [r["node_id"] for r in await conn.fetch(query("a"))] == ["decision:reset"]


async def test_bad_search_requests_are_clear_errors(app_pool: asyncpg.Pool, scope: Scope) -> None:
    with pytest.raises(ValidationError, match="mode 'fuzzy'"):
        await search(app_pool, scope, "x", mode="fuzzy")
    with pytest.raises(ValidationError, match="empty"):
        await search(app_pool, scope, "  ", mode="fulltext")
    with pytest.raises(ValidationError, match="limit"):
        await search(app_pool, scope, "x", mode="fulltext", limit=0)


async def test_a_task_of_common_words_still_reads_the_node_with_its_rare_one(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    """Full text reads the nodes that hold the task's rarer terms (from the table's statistics),
    not a sample of everything its common words match: with room for 20 matches, the one
    section of 400 that names the rollback is found (issue 31; before, the read took the first
    20 matches of "deploy service" in table order and never saw it)."""
    common = [
        NodeAsserted(
            node_id=f"section:docs/deploy{i:03}.md#s", node_type="Section", name=f"Deploy {i}",
            content=f"Deploy the service {i} with the usual service deploy steps.",
        )
        for i in range(400)
    ]  # fmt: skip
    rare = NodeAsserted(
        node_id="section:docs/zz-rollback.md#s", node_type="Section", name="Undo",
        content="To deploy the service again after a failure, use the rollback command.",
    )  # fmt: skip
    await projected(store, system_pool, scope, [*common, rare])
    await system_pool.execute("ANALYZE kg_nodes")
    task = "how do I deploy the service with a rollback"
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", scope.tenant_id)
        rows = await conn.fetch(
            "SELECT node_id FROM kg_fulltext_bm25($1, $2, "
            "array(SELECT lexeme FROM unnest(to_tsvector('english', $3))), NULL, 20, 401, 20) "
            "ORDER BY rank DESC",
            scope.tenant_id,
            scope.project_id,
            task,
        )
    assert [r["node_id"] for r in rows] == ["section:docs/zz-rollback.md#s"]
    async with app_pool.acquire() as conn:
        terms = "array(SELECT lexeme FROM unnest(to_tsvector('english', $1)))"
        rarest = f"SELECT kg_rarest_term_rows({terms}, 401)"
        assert await conn.fetchval(rarest, "deploy the service") > 300, "both in every node"
        assert await conn.fetchval(rarest, task) < 20, "the rollback is in one"
    result = await search(app_pool, scope, task, mode="fulltext")
    assert result.hits[0].node_id == "section:docs/zz-rollback.md#s"


async def test_a_task_of_only_common_terms_ranks_full_text_among_the_vector_candidates(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    """When even the task's rarest term matches more nodes than full text may read, the read
    would be a sample: full text ranks the vector candidates instead."""
    from kg.search import search_in_transaction

    hashing = HashingEmbedder()
    await project(store, system_pool, scope, hashing)
    vector = await query_vector(hashing, "login credentials")
    async with app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", scope.tenant_id)
        normal = await search_in_transaction(
            conn, scope, "login credentials", "hybrid", None, 3, vector, 40
        )
        broad = await search_in_transaction(
            conn, scope, "login credentials", "hybrid", None, 3, vector, 40, broad_rows=-1
        )
    assert broad[0].node_id == normal[0].node_id == "component:auth"
    assert broad[0].fulltext_rank == 1, "full text still ranks, among the vector candidates"


async def test_fulltext_weighs_a_rare_term_above_common_ones(
    store: EventStore, system_pool: asyncpg.Pool, app_pool: asyncpg.Pool, scope: Scope
) -> None:
    """BM25: a node with the task's one rare word ranks above one with two of its common
    words (ts_rank_cd, which counts matches and their proximity, ranked it the other way)."""
    common = [
        NodeAsserted(
            node_id=f"section:docs/s{i}.md#s", node_type="Section", name=f"Note {i}",
            content="The phone will resend the batch when the phone is back online.",
        )
        for i in range(8)
    ]  # fmt: skip
    rare = NodeAsserted(
        node_id="section:docs/idempotency.md#keys", node_type="Section", name="Duplicates",
        content="Duplicates are recognised by their idempotency key.",
    )  # fmt: skip
    await projected(store, system_pool, scope, [*common, rare])
    result = await search(
        app_pool, scope, "does the phone resend the batch with an idempotency key?", mode="fulltext"
    )
    assert result.hits[0].node_id == "section:docs/idempotency.md#keys"
