"""A small hand-built graph with known answers, and its policies (used across the tests)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.events.base import DomainEvent
from kg.policies.model import PolicyRule

if TYPE_CHECKING:
    from kg.runtime import Runtime


def node(
    node_id: str, node_type: str, name: str, content: str = "", labels: tuple[str, ...] = ()
) -> NodeAsserted:
    return NodeAsserted(
        node_id=node_id, node_type=node_type, name=name, content=content, labels=labels
    )


def edge(a: str, kind: str, b: str, weight: float = 1.0) -> EdgeAsserted:
    return EdgeAsserted(edge_type=kind, from_node=a, to_node=b, weight=weight)


SHOP: list[DomainEvent] = [
    node("project:shop", "Project", "Shop"),
    node("component:checkout", "Component", "Checkout", "Builds orders and calls payments."),
    node("component:payments", "Component", "Payments", "Charges cards through the gateway."),
    node("adr:0007", "ADR", "ADR-0007 gateway", "Card payments go through the gateway."),
    node(
        "component:vault",
        "Component",
        "Vault VAULT-SECRET-NAME",
        "VAULT-SECRET-CONTENT",
        ("secret",),
    ),
    node("component:hsm", "Component", "HSM behind the vault", "Reachable only through the vault."),
    node(
        "document:card-data",
        "Document",
        "Card data format",
        "PAN layout CARD-CONTENT",
        ("sensitive",),
    ),
    PolicyDefined(
        policy_id="policy:no-secrets",
        name="No secrets",
        rule=PolicyRule(effect="deny", labels=("secret",)),
    ),
    PolicyDefined(
        policy_id="policy:redact-card", name="Redact card data", rule=PolicyRule(effect="redact")
    ),
    PolicyDefined(
        policy_id="policy:checkout-actions",
        name="Checkout team may edit",
        rule=PolicyRule(effect="allow_actions", actions=("read", "edit")),
    ),
    edge("component:checkout", "BELONGS_TO", "project:shop"),
    edge("component:checkout", "USES", "component:payments", 1.0),
    edge("component:checkout", "REFERENCES", "adr:0007", 0.5),
    edge("component:payments", "USES", "component:vault"),
    edge("component:vault", "USES", "component:hsm"),
    edge("component:payments", "REFERENCES", "document:card-data"),
    edge("document:card-data", "GOVERNED_BY", "policy:redact-card"),
    edge("component:checkout", "GOVERNED_BY", "policy:checkout-actions"),
    edge("component:payments", "GOVERNED_BY", "policy:checkout-actions"),
]


#: What no command or tool may ever show of the shop graph with its decisions: the denied
#: vault's name and content, the redacted card document's content, and a decision a policy
#: denies (its text).
SECRETS = ("VAULT-SECRET-NAME", "VAULT-SECRET-CONTENT", "CARD-CONTENT", "HIDDEN-DECISION")


async def decide_over_shop(rt: Runtime) -> str:
    """Two decisions over the shop graph: ``decision:open``, informed by a context graph that
    showed the redacted card document, and ``decision:hidden``, which supersedes it and which
    a policy denies. Returns the context graph's id."""
    from kg.context.service import build_context_graph, parse_request
    from kg.decisions import record_decision

    graph = await build_context_graph(rt, parse_request(anchors=["component:payments"]))
    await record_decision(
        rt, text="Charge cards through the gateway", decision_id="open",
        context_graph_ids=[graph.context_graph_id], references=["document:card-data"],
    )  # fmt: skip
    await record_decision(
        rt, text="HIDDEN-DECISION rotate the vault keys", decision_id="hidden",
        context_graph_ids=[graph.context_graph_id], supersedes=["decision:open"],
    )  # fmt: skip
    await rt.store.append(
        rt.scope, "fixture:hide", [edge("decision:hidden", "GOVERNED_BY", "policy:no-secrets")]
    )
    await rt.catch_up()
    return graph.context_graph_id
