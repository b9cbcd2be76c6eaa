"""Entities connect sections: a build walks from a section through the entities it names to the
other sections naming them, in one hop, and does not spend its budget on the entities."""

from __future__ import annotations

from kg.context.builder import ContextBuilder
from kg.context.memory_source import MemoryGraph
from kg.context.service import parse_request
from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.events.base import DomainEvent
from kg.events.policy import PolicyRule

SUBSCRIPTIONS = "section:docs/subscriptions.md#lifecycle"
INVOICES = "section:docs/invoices.md#finalizing"
UNRELATED = "section:docs/teams.md#members"


def billing_graph(*extra: DomainEvent) -> MemoryGraph:
    def section(node_id: str, text: str) -> NodeAsserted:
        return NodeAsserted(node_id=node_id, node_type="Section", name=node_id, content=text)

    def mentions(section_id: str, entity: str, weight: float = 1.0) -> EdgeAsserted:
        return EdgeAsserted(
            edge_type="MENTIONS", from_node=section_id, to_node=entity, weight=weight
        )

    return MemoryGraph.from_events(
        [
            section(SUBSCRIPTIONS, "Each renewal of a Subscription creates an Invoice."),
            section(INVOICES, "An Invoice is finalized, then paid by a Charge."),
            section(UNRELATED, "A team has members with roles."),
            NodeAsserted(node_id="apiobject:invoice", node_type="APIObject", name="Invoice"),
            NodeAsserted(node_id="apiobject:role", node_type="APIObject", name="Role"),
            mentions(SUBSCRIPTIONS, "apiobject:invoice"),
            mentions(INVOICES, "apiobject:invoice", weight=3),
            mentions(UNRELATED, "apiobject:role"),
            *extra,
        ]
    )  # fmt: skip


async def test_a_hop_walks_through_a_named_entity_to_the_sections_naming_it() -> None:
    graph = await ContextBuilder(billing_graph()).build(
        parse_request(anchors=[SUBSCRIPTIONS], max_depth=1)
    )
    reached = {n.node_id: n for n in graph.nodes}
    assert INVOICES in reached and reached[INVOICES].hop == 1
    assert reached[INVOICES].reason == f"hop 1 from {SUBSCRIPTIONS} via apiobject:invoice"
    assert "apiobject:invoice" not in reached, "the entity connects; it is not content"
    assert UNRELATED not in reached, "a section naming other entities is not reached"


async def test_an_entity_asked_for_is_still_shown_and_expanded() -> None:
    graph = await ContextBuilder(billing_graph()).build(
        parse_request(anchors=["apiobject:invoice"], max_depth=1)
    )
    assert {n.node_id for n in graph.nodes} == {"apiobject:invoice", SUBSCRIPTIONS, INVOICES}


async def test_policy_first_keeps_to_what_its_policies_allow_through_entities_too() -> None:
    policy = PolicyDefined(
        policy_id="policy:billing", name="billing edits",
        rule=PolicyRule(effect="allow_actions", actions=("edit",), node_ids=(SUBSCRIPTIONS,)),
    )  # fmt: skip
    graph = billing_graph(policy)
    assert INVOICES in {
        n.node_id
        for n in (
            await ContextBuilder(graph).build(parse_request(anchors=[SUBSCRIPTIONS], max_depth=1))
        ).nodes
    }, "reached without the filter"
    built = await ContextBuilder(graph).build(
        parse_request(mode="policy_first", anchors=[SUBSCRIPTIONS], max_depth=1)
    )
    assert INVOICES not in {n.node_id for n in built.nodes}, "no allowed action covers it"
