"""A synthetic knowledge graph for benchmarks: typed nodes with prose, ~N edges per node."""

from __future__ import annotations

import random

from kg.config import Scope
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.events.base import DomainEvent

WORDS = (
    "payment gateway checkout order invoice refund customer account password login token session "
    "policy audit decision component service database event stream projection index vector search "
    "graph node edge schema migration tenant project release deploy monitor alert latency cache "
    "queue worker retry timeout error solution skill learning function module interface contract "
    "budget security privacy consent export report review approval workflow"
).split()
TYPES = ("Decision", "Component", "Document", "Section", "Requirement", "ADR", "Function", "File")
EDGE_TYPES = ("REFERENCES", "USES", "CALLS", "BELONGS_TO", "DEFINES", "CONTAINS", "INFORMED_BY")


def sentence(rng: random.Random, n: int = 18) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def node_id(i: int) -> str:
    return f"{TYPES[i % len(TYPES)].lower()}:n{i}"


def graph_events(n_nodes: int, edges_per_node: int, seed: int = 7) -> list[DomainEvent]:
    rng = random.Random(seed)
    events: list[DomainEvent] = []
    for i in range(n_nodes):
        events.append(
            NodeAsserted(
                node_id=node_id(i), node_type=TYPES[i % len(TYPES)],
                name=f"{TYPES[i % len(TYPES)]} {i}: {sentence(rng, 5)}",
                content=sentence(rng) + " " + sentence(rng),
                labels=("sensitive",) if i % 50 == 0 else (),
            )  # fmt: skip
        )
    for i in range(n_nodes):
        for k in range(edges_per_node):
            # Mostly local links (a "neighbourhood") plus some long-range ones.
            j = (i + rng.randint(1, 50)) % n_nodes if k % 3 else rng.randrange(n_nodes)
            if j != i:
                events.append(
                    EdgeAsserted(
                        edge_type=EDGE_TYPES[(i + k) % len(EDGE_TYPES)], from_node=node_id(i),
                        to_node=node_id(j), weight=round(rng.uniform(0.2, 1.0), 2),
                    )  # fmt: skip
                )
    return events


async def append_all(store: EventStore, scope: Scope, events: list[DomainEvent], batch: int = 2000) -> None:
    for start in range(0, len(events), batch):
        await store.append(scope, f"synthetic:{start // batch}", events[start : start + batch])
