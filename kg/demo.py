"""A small, realistic slice of a project's knowledge used by ``kg demo`` and the README."""

from __future__ import annotations

from kg.events import AppendResult, EdgeAsserted, EventMetadata, NodeAsserted
from kg.events.base import DomainEvent
from kg.runtime import Runtime


def demo_events() -> list[DomainEvent]:
    return [
        NodeAsserted(node_id="project:webshop", node_type="Project", name="Webshop"),
        NodeAsserted(
            node_id="adr:0007",
            node_type="ADR",
            name="ADR-0007: payments go through the gateway",
            content="All card payments are processed by the payment gateway; "
            "no card data is stored.",
        ),
        NodeAsserted(
            node_id="policy:no-card-data",
            node_type="Policy",
            name="No card data in context",
            content="Agents must never see raw card numbers.",
            properties={"effect": "redact"},
        ),
        NodeAsserted(
            node_id="component:checkout",
            node_type="Component",
            name="checkout service",
            content="Builds the order and hands payment to the gateway.",
        ),
        EdgeAsserted(
            edge_type="BELONGS_TO", from_node="component:checkout", to_node="project:webshop"
        ),
        EdgeAsserted(
            edge_type="GOVERNED_BY", from_node="component:checkout", to_node="policy:no-card-data"
        ),
        EdgeAsserted(edge_type="REFERENCES", from_node="component:checkout", to_node="adr:0007"),
    ]


async def seed_demo(rt: Runtime) -> AppendResult:
    return await rt.store.append(
        rt.scope,
        "demo:seed",
        demo_events(),
        idempotency_key="demo:seed:v1",
        metadata=EventMetadata(actor="kg demo", source="kg/demo.py"),
    )
