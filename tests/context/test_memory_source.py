"""Contract: the in-memory graph source answers the builder exactly as the SQL reader does.

The same builds over the shop graph run against the projection in PostgreSQL and against
:class:`MemoryGraph` built from the same events; the graphs must agree node for node, score for
score, edge for edge, governance included. Builder tests that need no database can then use the
memory source and run in milliseconds.
"""

from __future__ import annotations

import pytest

from kg.context.builder import ContextBuilder
from kg.context.memory_source import MemoryGraph
from kg.context.result import ContextGraph
from kg.context.service import build_in_snapshot, parse_request
from kg.runtime import Runtime
from tests.shop import SHOP

REQUESTS = [
    {"anchors": ["component:checkout"]},
    {"anchors": ["component:checkout"], "max_depth": 3},
    {"anchors": ["component:payments"], "edge_types": ["USES"]},
    {"anchors": ["component:checkout"], "node_types": ["Component"], "max_nodes": 3},
    {"anchors": ["component:payments", "adr:0007"], "token_budget": 120},
    {"anchors": ["component:checkout"], "mode": "policy_first"},
    {"anchors": ["component:checkout"], "policies": ["policy:redact-card"]},
]


def comparable(graph: ContextGraph) -> dict[str, object]:
    data = graph.to_dict()
    for key in ("as_of_position", "context_graph_id", "content_hash", "rendering"):
        data.pop(key, None)
    return data


@pytest.mark.parametrize("fields", REQUESTS, ids=[str(r) for r in REQUESTS])
async def test_memory_and_postgres_sources_build_the_same_graph(
    shop: Runtime, fields: dict[str, object]
) -> None:
    request = parse_request(**fields)
    recorded_at = await shop.system_pool.fetchval("SELECT max(updated_at) FROM kg_nodes")
    memory = MemoryGraph.from_events(SHOP, project_id=shop.scope.project_id, at=recorded_at)

    from_sql = await build_in_snapshot(shop.app_pool, shop.scope, request, None)
    from_memory = await ContextBuilder(memory, None).build(request)

    assert comparable(from_memory) == comparable(from_sql)
    assert from_memory.nodes, "the build found something to compare"


async def test_a_memory_build_needs_no_database_and_honours_policies() -> None:
    memory = MemoryGraph.from_events(SHOP)
    graph = await ContextBuilder(memory, None).build(
        parse_request(anchors=["component:checkout"], max_depth=3)
    )
    ids = {n.node_id for n in graph.nodes}
    assert "component:payments" in ids
    assert "component:vault" not in ids, "denied by policy"
    assert graph.governance.excluded_count >= 1
