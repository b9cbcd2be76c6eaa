"""A small, realistic slice of a project's knowledge used by ``kg demo`` and the README."""

from __future__ import annotations

from kg.events import AppendResult, EdgeAsserted, EventMetadata, NodeAsserted, PolicyDefined
from kg.events.base import DomainEvent
from kg.policies.model import PolicyRule
from kg.runtime import Runtime


def demo_events() -> list[DomainEvent]:
    def node(
        node_id: str, node_type: str, name: str, content: str = "", **kw: object
    ) -> NodeAsserted:
        return NodeAsserted(node_id=node_id, node_type=node_type, name=name, content=content, **kw)

    def edge(a: str, kind: str, b: str, weight: float = 1.0) -> EdgeAsserted:
        return EdgeAsserted(edge_type=kind, from_node=a, to_node=b, weight=weight)

    return [
        node("project:webshop", "Project", "Webshop"),
        node(
            "adr:0007",
            "ADR",
            "ADR-0007: payments go through the gateway",
            "All card payments are processed by the payment gateway; no card data is stored.",
        ),
        node(
            "component:checkout",
            "Component",
            "checkout service",
            "Builds the order and hands payment to the gateway.",
        ),
        node(
            "component:gateway-client",
            "Component",
            "payment gateway client",
            "Signs requests to the gateway; retries with idempotency keys.",
        ),
        node(
            "document:card-vault",
            "Document",
            "Card vault runbook",
            "Where the HSM keys live and how to rotate them.",
            labels=("secret",),
        ),
        node("requirement:NFR-2", "Requirement", "NFR-2: checkout p95 under 300 ms"),
        PolicyDefined(
            policy_id="policy:no-secrets",
            name="Secrets never reach an agent",
            rule=PolicyRule(effect="deny", labels=("secret",)),
        ),
        PolicyDefined(
            policy_id="policy:checkout-team",
            name="Checkout team may read and edit",
            rule=PolicyRule(effect="allow_actions", actions=("read", "edit", "run-tests")),
        ),
        edge("component:checkout", "BELONGS_TO", "project:webshop"),
        edge("component:checkout", "USES", "component:gateway-client"),
        edge("component:checkout", "REFERENCES", "adr:0007", 0.8),
        edge("component:checkout", "REFERENCES", "requirement:NFR-2", 0.6),
        edge("component:gateway-client", "REFERENCES", "document:card-vault"),
        edge("component:checkout", "GOVERNED_BY", "policy:checkout-team"),
        edge("component:gateway-client", "GOVERNED_BY", "policy:checkout-team"),
    ]


async def seed_demo(rt: Runtime) -> AppendResult:
    return await rt.store.append(
        rt.scope,
        "demo:seed",
        demo_events(),
        idempotency_key="demo:seed:v2",
        metadata=EventMetadata(actor="kg demo", source="kg/demo.py"),
    )
