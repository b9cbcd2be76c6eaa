"""Invariant 7: a logged context graph re-derived from the log at its as-of position hashes the
same, even after later events changed the graph."""

from __future__ import annotations

from kg.config import Scope
from kg.context.builder import BUILDER_VERSION
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.events import EdgeAsserted, NodeAsserted, NodeRetired
from kg.runtime import Runtime


async def test_reproduction_after_later_changes_gives_the_same_hash(
    shop: Runtime, scope: Scope
) -> None:
    anchor = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    semantic = await build_context_graph(
        shop, parse_request(mode="semantic", task="card gateway payments")
    )

    await shop.store.append(
        scope,
        "later",
        [
            NodeAsserted(
                node_id="component:payments",
                node_type="Component",
                name="Payments v2",
                content="rewritten",
            ),
            NodeRetired(node_id="adr:0007"),
            NodeAsserted(node_id="component:ledger", node_type="Component", name="Ledger"),
            EdgeAsserted(
                edge_type="USES", from_node="component:checkout", to_node="component:ledger"
            ),
        ],
    )
    now = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    assert now.content_hash != anchor.content_hash, "the graph did change"

    for graph in (anchor, semantic):
        result = await reproduce_context_graph(shop, graph.context_graph_id)
        assert result.matches, str(result)
        assert result.as_of_position == graph.as_of_position
    leftover = await shop.system_pool.fetchval(
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'kg_repro_%'"
    )
    assert leftover == 0


async def rewrite_logged_build(rt: Runtime, context_graph_id: str, new_payload: str) -> None:
    """Tamper with the logged ContextGraphBuilt (bypassing the append-only trigger), as an
    attacker with database access would; ``new_payload`` is an SQL expression of ``payload``."""
    async with rt.system_pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(
            f"UPDATE kg_events SET payload = {new_payload} WHERE payload->>'context_graph_id' = $1",
            context_graph_id,
        )


async def test_a_forged_hash_in_the_log_is_reported_as_a_mismatch(
    shop: Runtime, scope: Scope
) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:payments"]))
    await rewrite_logged_build(
        shop,
        graph.context_graph_id,
        "payload || jsonb_build_object("
        "'node_ids', jsonb_build_array('component:payments'), 'content_hash', 'forged')",
    )
    result = await reproduce_context_graph(shop, graph.context_graph_id)
    assert not result.matches
    assert "MISMATCH" in str(result) and result.extra_nodes


async def test_a_graph_from_an_older_builder_says_so_instead_of_looking_forged(
    shop: Runtime, scope: Scope
) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:payments"]))
    logged = await shop.system_pool.fetchval(
        "SELECT payload->>'builder_version' FROM kg_events WHERE payload->>'context_graph_id' = $1",
        graph.context_graph_id,
    )
    assert logged == str(BUILDER_VERSION)
    await rewrite_logged_build(
        shop,
        graph.context_graph_id,
        "(payload - 'builder_version') || "
        "jsonb_build_object('content_hash', 'from-an-older-algorithm')",
    )
    result = await reproduce_context_graph(shop, graph.context_graph_id)
    assert not result.matches and result.builder_version == 1
    assert "built by context builder version 1" in str(result)
