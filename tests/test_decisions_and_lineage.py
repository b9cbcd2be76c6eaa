"""record_decision and trace_decision_lineage: from a decision back to its sources and forward."""

from __future__ import annotations

import pytest

from kg.config import Scope
from kg.context.service import build_context_graph, parse_request, record_context_usage
from kg.decisions import record_decision
from kg.errors import NotFoundError, ValidationError
from kg.events import EventMetadata, NodeAsserted, PendingEvent
from kg.lineage import trace_decision_lineage
from kg.runtime import Runtime


async def test_a_decision_links_to_the_nodes_its_context_graph_showed(shop: Runtime) -> None:
    graph = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], max_depth=1)
    )
    decision = await record_decision(
        shop,
        text="Retry gateway calls with idempotency keys",
        rationale="ADR-0007",
        context_graph_ids=[graph.context_graph_id],
        references=["adr:0007"],
        metadata=EventMetadata(actor="agent-7"),
    )
    assert decision.node_id == f"decision:{decision.decision_id}"
    assert set(decision.informed_by) == {n.node_id for n in graph.nodes}
    await shop.catch_up()
    edges = await shop.system_pool.fetch(
        "SELECT edge_type, to_node FROM kg_edges WHERE from_node = $1 ORDER BY 1, 2",
        decision.node_id,
    )
    kinds = {(r["edge_type"], r["to_node"]) for r in edges}
    assert ("REFERENCES", "adr:0007") in kinds and ("INFORMED_BY", "component:payments") in kinds


async def test_reported_usage_narrows_what_informed_the_decision(shop: Runtime) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    await record_context_usage(shop, graph.context_graph_id, "call-1", "read", ["adr:0007"])
    decision = await record_decision(
        shop, text="Use the gateway", context_graph_ids=[graph.context_graph_id]
    )
    assert decision.informed_by == ("adr:0007",)


async def test_upstream_lineage_reaches_sources_with_position_time_and_actor(
    shop: Runtime, scope: Scope
) -> None:
    await shop.store.append(
        scope,
        "ingest:docs/adr-0008.md",
        [
            PendingEvent(
                NodeAsserted(
                    node_id="adr:0008",
                    node_type="ADR",
                    name="ADR-0008 retries",
                    content="Retry twice.",
                ),
                EventMetadata(actor="kg sync", source="docs/adr/0008.md@3f2a9c1"),
            )
        ],
    )
    graph = await build_context_graph(
        shop,
        parse_request(anchors=["adr:0008"], max_depth=0),
        EventMetadata(actor="agent-7", session_id="s-1"),
    )
    decision = await record_decision(
        shop,
        text="Retry twice",
        context_graph_ids=[graph.context_graph_id],
        metadata=EventMetadata(actor="agent-7"),
    )
    lineage = (await trace_decision_lineage(shop, decision.decision_id, "upstream", 3)).to_dict()
    steps = {s["id"]: s for s in lineage["steps"]}
    d, g, n = (
        steps[decision.node_id],
        steps[f"context_graph:{graph.context_graph_id}"],
        steps["adr:0008"],
    )
    assert d["actor"] == "agent-7" and d["position"] == decision.position and d["recorded_at"]
    assert g["actor"] == "agent-7" and g["details"]["session_id"] == "s-1"
    assert n["actor"] == "kg sync" and n["details"]["source"] == "docs/adr/0008.md@3f2a9c1"
    assert steps["source:docs/adr/0008.md@3f2a9c1"]["kind"] == "source"
    links = {(link["from_id"], link["relation"], link["to_id"]) for link in lineage["links"]}
    assert (decision.node_id, "INFORMED_BY", f"context_graph:{graph.context_graph_id}") in links
    assert (f"context_graph:{graph.context_graph_id}", "CONTAINED", "adr:0008") in links
    assert ("adr:0008", "SOURCED_FROM", "source:docs/adr/0008.md@3f2a9c1") in links


async def test_downstream_lineage_follows_later_graphs_and_superseding_decisions(
    shop: Runtime,
) -> None:
    first = await record_decision(
        shop, text="Charge on shipment", references=["component:payments"]
    )
    later_graph = await build_context_graph(
        shop, parse_request(anchors=[first.node_id], max_depth=1)
    )
    assert first.node_id in {n.node_id for n in later_graph.nodes}
    second = await record_decision(
        shop,
        text="Charge on order instead",
        context_graph_ids=[later_graph.context_graph_id],
        supersedes=[first.node_id],
    )
    lineage = (await trace_decision_lineage(shop, first.decision_id, "downstream", 2)).to_dict()
    links = {(link["from_id"], link["relation"], link["to_id"]) for link in lineage["links"]}
    cg = f"context_graph:{later_graph.context_graph_id}"
    assert (first.node_id, "SHOWN_IN", cg) in links
    assert (cg, "INFORMED", second.node_id) in links
    assert (second.node_id, "SUPERSEDES", first.node_id) in links


async def test_lineage_never_shows_a_denied_node(shop: Runtime) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:payments"]))
    decision = await record_decision(shop, text="x", context_graph_ids=[graph.context_graph_id])
    lineage = (await trace_decision_lineage(shop, decision.decision_id, "both", 3)).to_dict()
    assert "vault" not in str(lineage).lower()


async def test_bad_decisions_and_traces_are_clear_errors(shop: Runtime) -> None:
    with pytest.raises(NotFoundError, match="cg_nope"):
        await record_decision(shop, text="x", context_graph_ids=["cg_nope"])
    with pytest.raises(NotFoundError, match="adr:9999"):
        await record_decision(shop, text="x", references=["adr:9999"])
    with pytest.raises(ValidationError, match="confidence"):
        await record_decision(shop, text="x", confidence=3.0)
    with pytest.raises(ValidationError, match="supersedes"):
        await record_decision(shop, text="x", supersedes=["adr:0007"])
    await record_decision(shop, text="x", decision_id="d1")
    with pytest.raises(ValidationError, match="already recorded"):
        await record_decision(shop, text="y", decision_id="d1")
    with pytest.raises(NotFoundError, match="decision:nope"):
        await trace_decision_lineage(shop, "nope")
    with pytest.raises(ValidationError, match="sideways"):
        await trace_decision_lineage(shop, "d1", "sideways")


async def test_a_node_denied_after_the_decision_stays_out_of_its_lineage(
    shop: Runtime, scope: Scope
) -> None:
    from kg.events import PolicyDefined
    from kg.policies.model import PolicyRule

    graph = await build_context_graph(shop, parse_request(anchors=["adr:0007"], max_depth=0))
    decision = await record_decision(shop, text="x", context_graph_ids=[graph.context_graph_id])
    await shop.store.append(scope, "policies", [
        PolicyDefined(policy_id="policy:hide-adrs", name="Hide ADRs",
                      rule=PolicyRule(effect="deny", node_types=("ADR",))),
    ])  # fmt: skip
    lineage = (await trace_decision_lineage(shop, decision.decision_id, "upstream", 3)).to_dict()
    assert "adr:0007" not in str(lineage)
    assert lineage["excluded_by_policy"] == 1
