"""The MCP tools through a real client (``kg mcp`` over stdio) against the coordinator, and
tenant isolation as the application role: a second tenant sees nothing of the first, through
MCP and through SQL on the distributed tables (row-level security evaluated on the shards)."""

from __future__ import annotations

from pathlib import Path

import asyncpg
import pytest

from kg.config import Scope
from kg.db.tenancy import set_tenant
from kg.runtime import Runtime
from tests.mcp.client import call, error_text, ok, server_env, stdio_session, text_of
from tests.mcp.turn import agent_turn
from tests.shop import SHOP

pytestmark = pytest.mark.citus

TENANT_TABLES = (
    "kg_events", "kg_chain_heads", "kg_event_content", "kg_merkle_nodes",
    "projection_checkpoints", "kg_nodes", "kg_edges", "kg_passages", "context_graphs",
    "context_graph_usage",
)  # fmt: skip


def _env(url: str, scope: Scope) -> dict[str, str]:
    return {**server_env(url), "KG_TENANT": scope.tenant_id, "KG_PROJECT": scope.project_id}


async def test_an_agent_turn_over_mcp_and_another_tenant_sees_nothing_of_it(
    citus_url: str, citus_runtime: Runtime, citus_scope: Scope, tmp_path: Path
) -> None:
    await citus_runtime.store.append(citus_scope, "fixture:shop", SHOP)
    await citus_runtime.catch_up()
    async with stdio_session(_env(citus_url, citus_scope), tmp_path) as session:
        turn = await agent_turn(session)  # build, record usage, decide, trace (asserted there)
        found = ok(await call(session, "query_knowledge_graph", text="gateway", mode="fulltext"))
        near = ok(await call(session, "get_entity_neighbors", node_id="component:payments"))
        path = ok(
            await call(
                session, "find_path", source="component:checkout", target="component:payments"
            )
        )
        semantic = ok(
            await call(session, "build_context_graph", mode="semantic", task="card payments")
        )
        governed = ok(
            await call(
                session, "build_context_graph", mode="policy_first", anchors=["component:checkout"]
            )
        )
    assert {"adr:0007", "component:payments"} <= {r["node_id"] for r in found["results"]}
    assert near["node"]["node_id"] == "component:payments" and near["neighbors"]
    assert [n["node_id"] for n in path["nodes"]][-1] == "component:payments"
    assert semantic["nodes"] and governed["governance"]["policies_applied"]

    other = Scope(f"{citus_scope.tenant_id}-b", citus_scope.project_id)
    decision = turn["decision"]["decision_id"]
    async with stdio_session(_env(citus_url, other), tmp_path) as session:
        nothing = ok(await call(session, "query_knowledge_graph", text="gateway"))
        missing = await call(session, "get_entity_neighbors", node_id="component:payments")
        lineage = await call(session, "trace_decision_lineage", decision_id=decision)
        empty = await call(session, "build_context_graph", anchors=["component:checkout"])
    assert nothing["results"] == []
    assert "component:payments" not in str(missing.structured_content) and missing.is_error
    assert decision in error_text(lineage) or "not found" in error_text(lineage)
    assert "Checkout" not in text_of(empty) and "gateway" not in text_of(empty)


async def test_row_level_security_on_the_shards_keeps_tenants_apart(
    citus_runtime: Runtime, citus_scope: Scope, citus_app_pool: asyncpg.Pool
) -> None:
    await citus_runtime.store.append(citus_scope, "fixture:shop", SHOP)
    await citus_runtime.catch_up()
    tenant = citus_scope.tenant_id

    async def visible(as_tenant: str | None) -> dict[str, int]:
        async with citus_app_pool.acquire() as conn, conn.transaction():
            if as_tenant is not None:
                await set_tenant(conn, as_tenant)
            return {
                table: int(
                    await conn.fetchval(
                        f"SELECT count(*) FROM {table} WHERE tenant_id = $1", tenant
                    )
                )
                for table in TENANT_TABLES
            }

    own = await visible(tenant)
    assert own["kg_events"] == len(SHOP) and own["kg_nodes"] > 0 and own["kg_edges"] > 0
    assert own["kg_chain_heads"] == 1 and own["projection_checkpoints"] > 0
    # Another tenant's scope, and no scope at all, see none of those rows, even when the
    # query names the tenant (the router sends it to the right shard; the policy there
    # filters it out).
    assert set((await visible(f"{tenant}-b")).values()) == {0}
    assert set((await visible(None)).values()) == {0}
    # A whole-table scan (every shard, every worker) returns only the scope's own rows.
    async with citus_app_pool.acquire() as conn, conn.transaction():
        await set_tenant(conn, tenant)
        tenants = await conn.fetch("SELECT DISTINCT tenant_id FROM kg_nodes")
        search = await conn.fetch(
            "SELECT node_id FROM kg_fulltext_bm25($1, 'webshop', ARRAY['gateway'], NULL, 10, 100, "
            "1000)",
            f"{tenant}-b",
        )
    assert [r["tenant_id"] for r in tenants] == [tenant]
    assert search == [], "the full-text function answers only for the session's tenant"
