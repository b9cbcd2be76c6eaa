"""A small hand-built graph with known answers, and its policies (used across the tests)."""

from __future__ import annotations

from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.events.base import DomainEvent
from kg.policies.model import PolicyRule


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
