"""The context-graph builder on a hand-built graph with known answers."""

from __future__ import annotations

import json

import pytest

from kg.config import Scope
from kg.context.fit import structured_tokens
from kg.context.render import estimate_tokens, render
from kg.context.service import (
    build_context_graph,
    build_in_snapshot,
    parse_request,
    record_context_usage,
)
from kg.errors import NotFoundError, ValidationError
from kg.events import EdgeAsserted, EventMetadata, NodeAsserted
from kg.runtime import Runtime
from tests.shop import SHOP

DENIED_MARKERS = ("component:vault", "VAULT-SECRET", "component:hsm")


def ids(graph: object) -> list[str]:
    return [n.node_id for n in graph.nodes]  # type: ignore[attr-defined]


async def test_anchor_mode_expands_the_ego_network_with_reasons_and_scores(shop: Runtime) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    by_id = {n.node_id: n for n in graph.nodes}
    assert set(by_id) == {
        "component:checkout",
        "component:payments",
        "adr:0007",
        "project:shop",
        "policy:checkout-actions",
        "document:card-data",
    }
    assert ids(graph)[0] == "component:checkout" and by_id["component:checkout"].reason == "anchor"
    assert by_id["component:payments"].reason == "hop 1 from component:checkout via USES"
    assert by_id["document:card-data"].hop == 2
    assert by_id["component:payments"].score > by_id["adr:0007"].score, "edge weight counts"
    assert by_id["adr:0007"].score > by_id["document:card-data"].score, "hop distance counts"
    assert ("component:checkout", "USES", "component:payments") in {
        (e.from_node, e.edge_type, e.to_node) for e in graph.edges
    }
    assert graph.context_graph_id.startswith("cg_") and graph.as_of_position == len(SHOP)


async def test_a_denied_node_is_counted_and_leaves_no_trace(shop: Runtime) -> None:
    graph = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], max_depth=4)
    )
    assert graph.governance.excluded_by_policy == {"policy:no-secrets": 1}
    assert graph.governance.excluded_count == 1
    everything = json.dumps(graph.to_dict())
    for marker in DENIED_MARKERS:
        assert marker not in everything, f"{marker} leaked (the HSM is only reachable through it)"
    assert all("vault" not in e.edge_id for e in graph.edges)


async def test_a_denied_anchor_yields_nothing_but_a_count(shop: Runtime) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:vault"]))
    assert graph.nodes == () and graph.edges == ()
    assert graph.governance.excluded_count == 1
    assert "VAULT-SECRET" not in graph.rendering


async def test_redacted_nodes_keep_id_and_type_only(shop: Runtime) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:payments"]))
    card = next(n for n in graph.nodes if n.node_id == "document:card-data")
    assert card.redacted and card.node_type == "Document"
    assert (card.name, card.content, card.properties, card.labels) == ("[redacted]", "", {}, ())
    assert "CARD-CONTENT" not in graph.rendering and "PAN layout" not in json.dumps(graph.to_dict())
    assert graph.governance.redacted_by_policy == {"policy:redact-card": 1}
    assert graph.governance.sensitive_count == 1
    assert "policy:redact-card" in graph.governance.policies_applied


async def test_allowed_actions_are_surfaced(shop: Runtime) -> None:
    graph = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], max_depth=1)
    )
    grant = graph.governance.allowed_actions["policy:checkout-actions"]
    assert grant == {
        "actions": ["read", "edit"],
        "nodes": ["component:checkout", "component:payments"],
    }
    assert "policy:checkout-actions: read, edit" in graph.rendering


@pytest.mark.parametrize(("budget", "expected"), [({"max_nodes": 2}, 2), ({"max_depth": 0}, 1)])
async def test_node_and_depth_budgets_are_respected(
    shop: Runtime, budget: dict[str, int], expected: int
) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"], **budget))
    assert len(graph.nodes) == expected
    assert graph.budget.nodes_used == expected


async def test_token_budget_limits_the_rendering(shop: Runtime) -> None:
    full = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    small = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], token_budget=90)
    )
    assert 1 <= len(small.nodes) < len(full.nodes)
    assert small.budget.truncated and not full.budget.truncated
    assert sum(len(n.name) for n in small.nodes) < sum(len(n.name) for n in full.nodes)
    assert estimate_tokens(small.rendering) <= 90 and small.budget.structured_tokens <= 90


async def test_edge_budget_keeps_the_edges_that_explain_each_node_first(shop: Runtime) -> None:
    full = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    tree = len(full.nodes) - 1  # one reach edge per node but the anchor
    assert len(full.edges) > tree, "the fixture has edges beyond the reach tree"
    assert full.budget.max_edges == 2 * 128 and full.budget.edges_used == len(full.edges)

    limited = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], max_edges=tree)
    )
    assert limited.nodes == full.nodes and limited.budget.truncated
    assert len(limited.edges) == limited.budget.edges_used == tree
    links = {frozenset((e.from_node, e.to_node)) for e in limited.edges}
    for node in limited.nodes[1:]:
        parent = node.reason.split(" from ")[1].split(" via ")[0]
        assert frozenset((parent, node.node_id)) in links, f"{node.node_id} lost its reach edge"


async def test_token_budget_counts_the_edges_too(shop: Runtime) -> None:
    full = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    allowed = full.governance.allowed_actions
    rendered = render(full.mode, full.as_of_position, full.nodes, [], allowed)
    nodes_only = max(structured_tokens(full.nodes, []), estimate_tokens(rendered)) + 20
    graph = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], token_budget=nodes_only + 20)
    )
    assert graph.nodes == full.nodes and 0 < len(graph.edges) < len(full.edges)
    assert graph.budget.truncated


async def test_same_request_on_same_position_gives_the_same_graph(
    shop: Runtime, scope: Scope
) -> None:
    request = parse_request(anchors=["component:checkout", "adr:0007"])
    first = await build_in_snapshot(shop.app_pool, scope, request, None)
    second = await build_in_snapshot(shop.app_pool, scope, request, None)
    assert (first.content_hash, first.rendering) == (second.content_hash, second.rendering)

    logged = await build_context_graph(shop, request)
    later = await build_context_graph(shop, request)
    assert logged.context_graph_id != later.context_graph_id
    assert logged.nodes == later.nodes, "logging a build does not change the next one"


async def test_semantic_mode_uses_matches_as_anchors(shop: Runtime) -> None:
    graph = await build_context_graph(
        shop, parse_request(mode="semantic", task="card payments through the gateway", max_depth=1)
    )
    reasons = {n.node_id: n.reason for n in graph.nodes}
    assert any(r.startswith("match #1 (sim ") for r in reasons.values())
    assert reasons.get("adr:0007", "").startswith("match #")
    assert graph.semantic_anchors and graph.embedder == "hashing-v1-384"
    assert graph.warnings, "the hashing fallback is announced in the result"
    assert not any("graph is empty" in w for w in graph.warnings)
    assert "VAULT-SECRET" not in json.dumps(graph.to_dict())


async def test_a_semantic_build_in_an_empty_project_says_why_it_found_nothing(
    runtime: Runtime,
) -> None:
    """Issue 30 item 10: 0 nodes and no word of why."""
    graph = await build_context_graph(
        runtime, parse_request(mode="semantic", task="card payments through the gateway")
    )
    assert graph.nodes == ()
    assert any("graph is empty" in w and "kg ingest" in w for w in graph.warnings)


async def test_policy_first_returns_governing_policies_and_only_what_they_allow(
    shop: Runtime,
) -> None:
    graph = await build_context_graph(
        shop, parse_request(mode="policy_first", anchors=["component:checkout"])
    )
    by_id = {n.node_id: n for n in graph.nodes}
    assert by_id["policy:checkout-actions"].reason == "policy governing component:checkout"
    assert set(by_id) == {"component:checkout", "policy:checkout-actions", "component:payments"}
    assert graph.governance.allowed_actions["policy:checkout-actions"]["actions"] == [
        "read",
        "edit",
    ]


async def test_tenant_scope_holds_even_when_ids_collide(shop: Runtime) -> None:
    other = Scope("intruder", "shop")
    await shop.store.append(
        other,
        "s",
        [NodeAsserted(node_id="component:checkout", node_type="Component", name="INTRUDER")],
    )
    await shop.store.append(
        other, "s", [NodeAsserted(node_id="component:evil", node_type="Component", name="EVIL")]
    )
    await shop.catch_up()
    graph = await build_context_graph(
        shop, parse_request(anchors=["component:checkout"], max_depth=3)
    )
    dumped = json.dumps(graph.to_dict())
    assert "INTRUDER" not in dumped and "EVIL" not in dumped


async def test_a_hub_cannot_crowd_the_rest_of_a_hop_out(runtime: Runtime, scope: Scope) -> None:
    """The anchor links weakly to a hub with 300 strong edges, and strongly to a node whose own
    (slightly weaker) neighbour must still make it into hop 2: each frontier node offers only
    its strongest few edges, so the hub cannot fill the hop's 256 candidates on its own."""

    def node(node_id: str) -> NodeAsserted:
        return NodeAsserted(node_id=node_id, node_type="Component", name=node_id)

    def edge(a: str, b: str, weight: float) -> EdgeAsserted:
        return EdgeAsserted(edge_type="RELATES_TO", from_node=a, to_node=b, weight=weight)

    fans = [f"component:fan-{i:03}" for i in range(300)]
    events = [node(n) for n in ["component:a", "component:hub", "component:b", "component:c"]]
    events += [node(n) for n in fans] + [edge("component:hub", f, 1.0) for f in fans]
    events += [
        edge("component:a", "component:hub", 0.3),
        edge("component:a", "component:b", 1.0),
        edge("component:b", "component:c", 0.9),
    ]
    await runtime.store.append(scope, "fixture:hub", events)
    await runtime.catch_up()
    graph = await build_context_graph(
        runtime, parse_request(anchors=["component:a"], token_budget=1_000_000)
    )
    by_id = {n.node_id: n for n in graph.nodes}
    assert by_id["component:c"].reason == "hop 2 from component:b via RELATES_TO"
    from_hub = [n for n in graph.nodes if n.reason.startswith("hop 2 from component:hub")]
    assert len(graph.nodes) == 128 and 0 < len(from_hub) < 128


@pytest.mark.parametrize(
    ("fields", "error", "needle"),
    [
        ({"anchors": ["component:nope"]}, NotFoundError, "component:nope"),
        ({"anchors": ["component:checkout"], "max_nodes": -1}, ValidationError, "max_nodes"),
        ({"anchors": ["component:checkout"], "mode": "psychic"}, ValidationError, "mode"),
        ({"mode": "semantic"}, ValidationError, "task"),
        (
            {"anchors": ["component:checkout"], "policies": ["policy:nope"]},
            ValidationError,
            "policy:nope",
        ),
    ],
)
async def test_bad_requests_get_clear_errors(
    shop: Runtime, fields: dict[str, object], error: type[Exception], needle: str
) -> None:
    with pytest.raises(error, match=needle):
        await build_context_graph(shop, parse_request(**fields))


async def test_builds_and_usage_are_logged_and_projected(shop: Runtime, scope: Scope) -> None:
    graph = await build_context_graph(
        shop,
        parse_request(anchors=["component:checkout"], session_id="sess-1"),
        EventMetadata(actor="agent-7", session_id="sess-1", tool_call_id="call-1"),
    )
    first = await record_context_usage(
        shop, graph.context_graph_id, "call-2", "edit", ["component:payments"]
    )
    again = await record_context_usage(
        shop, graph.context_graph_id, "call-2", "edit", ["component:payments"]
    )
    assert again.duplicate and again.first_position == first.first_position
    await shop.catch_up()
    row = await shop.system_pool.fetchrow(
        "SELECT * FROM context_graphs WHERE context_graph_id = $1", graph.context_graph_id
    )
    assert row["content_hash"] == graph.content_hash and row["actor"] == "agent-7"
    assert row["session_id"] == "sess-1" and "component:payments" in row["node_ids"]
    usage = await shop.system_pool.fetch(
        "SELECT tool_call_id, usage_type, node_ids FROM context_graph_usage"
    )
    assert [tuple(u) for u in usage] == [("call-2", "edit", ["component:payments"])]

    with pytest.raises(ValidationError) as err:
        await record_context_usage(
            shop, graph.context_graph_id, "call-3", "read", ["component:vault"]
        )
    assert "vault" not in str(err.value)
    with pytest.raises(NotFoundError):
        await record_context_usage(shop, "cg_missing", "call-4")


async def test_long_content_is_bounded_by_max_content_chars(shop: Runtime) -> None:
    """A node's content is bounded in the result whatever its size in the graph (a Markdown
    section may be megabytes), even with a huge token budget; the cut is marked as partial."""
    spec = "Checkout spec. " + "x" * 10_000
    await shop.store.append(
        shop.scope,
        "fixture:long",
        [NodeAsserted(node_id="component:checkout", node_type="Component", name="C", content=spec)],
    )
    await shop.catch_up()

    request = parse_request(anchors=["component:checkout"], token_budget=1_000_000)
    graph = await build_context_graph(shop, request)
    checkout = next(n for n in graph.nodes if n.node_id == "component:checkout")
    assert len(checkout.content) <= 4000 and checkout.partial
    assert checkout.content.startswith("Checkout spec. ")
    assert all(len(n.content) <= 4000 for n in graph.nodes)

    more = await build_context_graph(
        shop,
        parse_request(
            anchors=["component:checkout"], token_budget=1_000_000, max_content_chars=20_000
        ),
    )
    whole = next(n for n in more.nodes if n.node_id == "component:checkout")
    assert whole.content == spec and not whole.partial
    with pytest.raises(ValidationError, match="max_content_chars"):
        parse_request(anchors=["component:checkout"], max_content_chars=100_001)
