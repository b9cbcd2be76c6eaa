"""``kg audit replay``: the graph as of a past position, kept in its own schema, read through an
as-of runtime that sees the log up to that position, stays in its tenant and writes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg
import pytest

from kg.audit.replay import create_replay_schema, drop_replay_schema
from kg.audit.snapshot import drop_kept, materialise, resolve_until
from kg.audit.verify import find_position_gaps, verify_tenant
from kg.config import Scope, Settings
from kg.db.functions import SIGNATURE
from kg.embeddings import HashingEmbedder
from kg.errors import ConfigurationError, ValidationError
from kg.events import EdgeAsserted, NodeAsserted, NodeRetired
from kg.events.multi import StreamEvent, append_multi
from kg.graph_queries import get_entity_neighbors
from kg.read.as_of import AsOfReadOnlyError, list_replays
from kg.runtime import Runtime, open_runtime
from kg.search import search


def node(node_id: str, name: str) -> NodeAsserted:
    return NodeAsserted(node_id=node_id, node_type="Component", name=name, content=name)


@pytest.fixture
async def history(runtime: Runtime, scope: Scope) -> AsyncIterator[int]:
    """A graph, then later changes to it; yields the position between the two."""
    first = await runtime.store.append(
        scope,
        "s",
        [
            node("component:a", "Alpha billing"),
            node("component:b", "Beta ledger"),
            EdgeAsserted(edge_type="USES", from_node="component:a", to_node="component:b"),
        ],
    )
    await runtime.store.append(Scope("other", "p"), "s", [node("component:x", "Other tenant")])
    await runtime.store.append(
        scope,
        "s",
        [
            node("component:a", "Alpha renamed"),
            NodeRetired(node_id="component:b"),
            node("component:c", "Gamma"),
        ],
    )
    await runtime.catch_up()
    yield first.last_position


@asynccontextmanager
async def open_as_of(runtime: Runtime, schema: str) -> AsyncIterator[Runtime]:
    settings = Settings(runtime.url, runtime.scope, Path("."))
    async with open_runtime(
        settings, url=runtime.url, embedder=HashingEmbedder(), as_of_schema=schema
    ) as rt:
        yield rt


async def test_replay_shows_the_graph_before_a_later_change(
    runtime: Runtime, scope: Scope, history: int
) -> None:
    as_of, applied = await materialise(
        runtime.system_pool,
        runtime.url,
        str(history),
        HashingEmbedder(),
        "past",
        tenant_id=scope.tenant_id,
    )
    assert (as_of.tenant_id, as_of.position, applied) == (scope.tenant_id, history, history)
    async with open_as_of(runtime, "past") as rt:
        assert rt.as_of is not None and rt.as_of.position == history
        # Every read path runs unchanged against the past graph.
        neighbours = await get_entity_neighbors(rt, "component:a")
        assert neighbours.node.name == "Alpha billing"
        assert [n.node_id for n in neighbours.neighbors] == ["component:b"]
        hits = await search(rt.app_pool, scope, "Gamma", mode="fulltext")
        assert not hits.hits, "component:c did not exist yet"
        # The log itself is seen as it was.
        assert await rt.store.last_position(scope) == history
        assert await rt.store.last_position(tenant_id=scope.tenant_id) == history
        assert [e.position for e in await rt.store.read_all(0, scope=scope)] == [1, 2, 3]
        assert (await verify_tenant(rt.app_pool, scope.tenant_id)).events == 3
        assert await find_position_gaps(rt.system_pool, scope.tenant_id) == []
        # Tenancy holds in the replay schema too.
        assert await rt.app_pool.fetch("SELECT node_id FROM kg_nodes") == []
        async with rt.app_pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT set_config('kg.tenant_id', 'acme', true)")
            rows = await conn.fetch("SELECT node_id FROM kg_nodes ORDER BY 1")
        assert [r["node_id"] for r in rows] == ["component:a", "component:b"]
    # The live graph moved on.
    live = await get_entity_neighbors(runtime, "component:a")
    assert live.node.name == "Alpha renamed" and live.neighbors == []


async def test_an_as_of_runtime_writes_nothing(
    runtime: Runtime, scope: Scope, history: int
) -> None:
    await materialise(
        runtime.system_pool, runtime.url, str(history), HashingEmbedder(), "ro", tenant_id="acme"
    )
    head = await runtime.store.last_position(scope)
    async with open_as_of(runtime, "ro") as rt:
        with pytest.raises(AsOfReadOnlyError, match="read-only"):
            await rt.store.append(scope, "s", [node("component:z", "Z")])
        with pytest.raises(AsOfReadOnlyError, match="read-only"):  # the bulk path too
            await append_multi(rt.store, scope, [StreamEvent("s", node("component:z", "Z"))])
        assert await rt.catch_up() == 0
        with pytest.raises(AsOfReadOnlyError):
            await rt.runner.rebuild()
        assert [s.position for s in await rt.runner.status(scope.tenant_id)] == [history] * 4
        for pool in (rt.app_pool, rt.system_pool):
            with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
                await pool.execute("UPDATE public.kg_chain_heads SET position = position")
    assert await runtime.store.last_position(scope) == head


async def test_replay_until_a_time_takes_the_prefix_recorded_by_then(
    runtime: Runtime, history: int
) -> None:
    pool = runtime.system_pool
    at = await pool.fetchval(
        "SELECT recorded_at FROM kg_events WHERE tenant_id = 'acme' AND position = $1", history
    )
    assert await resolve_until(pool, "acme", at.isoformat()) == history
    assert await resolve_until(pool, "acme", "2001-01-01") == 0
    # Positions are the tenant's own: acme's log ends at 6, the other tenant's at 1.
    assert await resolve_until(pool, "acme", "2999-01-01T00:00:00Z") == 6
    assert await resolve_until(pool, "other", "2999-01-01T00:00:00Z") == 1
    with pytest.raises(ValidationError, match="beyond the end of tenant 'other'"):
        await resolve_until(pool, "other", "2")
    with pytest.raises(ValidationError, match="ISO-8601"):
        await resolve_until(pool, "acme", "yesterday")


async def test_kept_replays_are_listed_refused_when_unknown_and_dropped(
    runtime: Runtime, history: int
) -> None:
    await materialise(runtime.system_pool, runtime.url, "2", HashingEmbedder(), tenant_id="acme")
    assert [r.schema for r in await list_replays(runtime.system_pool)] == ["kg_asof_acme_2"]
    with pytest.raises(ValidationError, match="already exists"):
        await materialise(
            runtime.system_pool, runtime.url, "2", HashingEmbedder(), tenant_id="acme"
        )
    with pytest.raises(ConfigurationError, match="no finished replay"):
        async with open_as_of(runtime, "nope"):
            pass
    with pytest.raises(ValidationError, match="not a replay schema"):
        await drop_kept(runtime.system_pool, "pg_toast")
    await drop_kept(runtime.system_pool, "kg_asof_acme_2")
    assert await list_replays(runtime.system_pool) == []


async def test_a_replay_kept_by_an_older_kg_is_refused_for_reading_but_listed(
    runtime: Runtime, history: int
) -> None:
    """Before migration 0006 a replay had no full-text function of its own: searching it would
    have reached public's, the graph of today."""
    await materialise(runtime.system_pool, runtime.url, "2", HashingEmbedder(), tenant_id="acme")
    await runtime.system_pool.execute(
        f'DROP FUNCTION "kg_asof_acme_2".kg_fulltext_bm25({SIGNATURE})'
    )
    assert [r.schema for r in await list_replays(runtime.system_pool)] == ["kg_asof_acme_2"]
    with pytest.raises(ConfigurationError, match="made by an older kg"):
        async with open_as_of(runtime, "kg_asof_acme_2"):
            pass
    # One kept before migration 0020 has the function with the tsquery argument it no longer
    # takes: as refused, not called with the wrong arguments.
    await runtime.system_pool.execute(
        'CREATE FUNCTION "kg_asof_acme_2".kg_fulltext_bm25(p_tenant text, p_project text, '
        "p_query tsquery, p_terms text[], p_types text[], p_cap integer, p_size float8) "
        "RETURNS TABLE (node_id text, rank real) LANGUAGE sql AS $$ SELECT 'x', 1::real $$"
    )
    with pytest.raises(ConfigurationError, match="made by an older kg"):
        async with open_as_of(runtime, "kg_asof_acme_2"):
            pass


async def test_a_replay_kept_before_per_tenant_order_is_refused_for_reading_but_listed(
    runtime: Runtime, history: int
) -> None:
    """Before migration 0013 a replay covered every tenant at a global position."""
    await materialise(runtime.system_pool, runtime.url, "2", HashingEmbedder(), tenant_id="acme")
    await runtime.system_pool.execute('ALTER TABLE "kg_asof_acme_2".kg_replay_info DROP tenant_id')
    (listed,) = await list_replays(runtime.system_pool)
    assert listed.schema == "kg_asof_acme_2" and "before per-tenant order" in listed.tenant_id
    with pytest.raises(ConfigurationError, match="made by an older kg"):
        async with open_as_of(runtime, "kg_asof_acme_2"):
            pass


async def test_a_replay_is_of_one_tenant_at_its_own_position(
    runtime: Runtime, history: int
) -> None:
    """The other tenant's only event is at its position 1; acme's first three are at 1-3."""
    as_of, applied = await materialise(
        runtime.system_pool, runtime.url, "1", HashingEmbedder(), tenant_id="other"
    )
    assert (as_of.schema, as_of.tenant_id, applied) == ("kg_asof_other_1", "other", 1)
    rows = await runtime.system_pool.fetch(
        'SELECT tenant_id, node_id FROM "kg_asof_other_1".kg_nodes'
    )
    assert [tuple(r) for r in rows] == [("other", "component:x")]
    events = await runtime.system_pool.fetch(
        'SELECT tenant_id, position FROM "kg_asof_other_1".kg_events'
    )
    assert [tuple(r) for r in events] == [("other", 1)]


async def test_a_replay_builds_its_full_text_indexes_once_and_keeps_them_as_created(
    runtime: Runtime, scope: Scope, history: int
) -> None:
    async def indexes(schema: str) -> list[str]:
        rows = await runtime.system_pool.fetch(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY indexname", schema
        )
        return [r["indexdef"].replace(f"{schema}.", "SCHEMA.") for r in rows]

    await create_replay_schema(runtime.system_pool, "untouched")
    await materialise(
        runtime.system_pool, runtime.url, str(history), HashingEmbedder(), "past", tenant_id="acme"
    )
    # The GIN indexes were dropped for the replay and built again after it, as they were.
    replayed = await indexes("past")
    assert replayed == await indexes("untouched")
    assert any("USING gin (tsv)" in d for d in replayed)
    async with open_as_of(runtime, "past") as rt:
        hits = await search(rt.app_pool, scope, "Alpha", mode="fulltext")
        assert [h.node_id for h in hits.hits] == ["component:a"]
    await drop_replay_schema(runtime.system_pool, "untouched")
