"""The read side and the application services on the cluster give what they give on one node:
the same scenario (the shop graph, context builds in all three modes, a search, decisions and
their lineage, a reproduction, a projection rebuild) runs against the single-node test database
and against the coordinator, and the answers are compared."""

from __future__ import annotations

from typing import Any

import pytest

from kg.audit.projections_check import verify_projections
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.embeddings import HashingEmbedder
from kg.graph_queries import query_knowledge_graph
from kg.lineage import trace_decision_lineage
from kg.runtime import Runtime
from tests.shop import SHOP, decide_over_shop

pytestmark = pytest.mark.citus


def _id(step: str) -> str:
    """A lineage step's id, with a context graph's random id left out."""
    return "context_graph:*" if step.startswith("context_graph:") else step


async def _scenario(rt: Runtime) -> dict[str, Any]:
    await rt.store.append(rt.scope, "fixture:shop", SHOP)
    await rt.catch_up()
    out: dict[str, Any] = {}
    for mode, request in {
        "anchor": parse_request(anchors=["component:checkout"]),
        "semantic": parse_request(mode="semantic", task="how are card payments charged"),
        "policy_first": parse_request(mode="policy_first", anchors=["component:checkout"]),
    }.items():
        graph = await build_context_graph(rt, request)
        out[mode] = {
            "nodes": [(n.node_id, n.reason, n.redacted, round(n.score, 6)) for n in graph.nodes],
            "edges": sorted(e.edge_id for e in graph.edges),
            "excluded": graph.governance.excluded_count,
            "redacted": graph.governance.redacted_count,
            "policies": graph.governance.policies_applied,
            "actions": sorted(graph.governance.allowed_actions),
            "as_of": graph.as_of_position,
            "rendering": graph.rendering.replace(rt.scope.tenant_id, "TENANT"),
        }
        reproduced = await reproduce_context_graph(rt, graph.context_graph_id)
        out[mode]["reproduced"] = reproduced.matches
    hits = await query_knowledge_graph(rt, "gateway payments", mode="fulltext")
    out["query"] = [(h.node_id, round(h.score, 6)) for h in hits.results]
    await decide_over_shop(rt)
    lineage = await trace_decision_lineage(rt, "open", direction="both")
    out["lineage"] = {
        "steps": sorted((_id(s.id), s.kind, s.position) for s in lineage.steps.values()),
        "links": sorted((_id(k.from_id), _id(k.to_id), k.relation) for k in lineage.links),
        "excluded": lineage.excluded_by_policy,
    }
    before = await rt.system_pool.fetch(
        "SELECT node_id, name, content, last_position FROM kg_nodes WHERE tenant_id = $1 "
        "ORDER BY node_id",
        rt.scope.tenant_id,
    )
    await rt.runner.rebuild()
    after = await rt.system_pool.fetch(
        "SELECT node_id, name, content, last_position FROM kg_nodes WHERE tenant_id = $1 "
        "ORDER BY node_id",
        rt.scope.tenant_id,
    )
    out["rebuild_same"] = [tuple(r) for r in before] == [tuple(r) for r in after]
    out["node_rows"] = len(after)
    checks = await verify_projections(
        rt.system_pool, rt.url, HashingEmbedder(), tenant_id=rt.scope.tenant_id
    )
    out["projections_verify"] = [(c.table, c.ok) for c in checks]
    return out


async def test_the_cluster_answers_as_one_node_does(
    runtime: Runtime, citus_runtime: Runtime
) -> None:
    single = await _scenario(runtime)
    cluster = await _scenario(citus_runtime)
    # The scenario is not vacuous: each build found nodes, the search hits, lineage walks.
    assert all(single[m]["nodes"] for m in ("anchor", "semantic", "policy_first"))
    assert single["policy_first"]["policies"] and single["anchor"]["excluded"] >= 1
    assert single["query"] and single["lineage"]["links"]
    assert all(single[m]["reproduced"] for m in ("anchor", "semantic", "policy_first"))
    assert single["rebuild_same"] and all(ok for _, ok in single["projections_verify"])
    for key in single:
        assert cluster[key] == single[key], key
