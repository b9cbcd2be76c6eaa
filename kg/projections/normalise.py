"""Domain events that amount to graph changes, rewritten as the graph events they mean.

Policies are nodes; a decision is a node with INFORMED_BY, REFERENCES and SUPERSEDES edges.
Both graph projections read the log through :func:`graph_events`, so this mapping exists once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from kg.events.envelope import RecordedEvent

GRAPH_EVENTS = frozenset({"NodeAsserted", "NodeRetired", "EdgeAsserted", "EdgeRetracted"})
MAPPED = frozenset({"PolicyDefined", "PolicyRetired", "DecisionRecorded"})


def _as(event: RecordedEvent, event_type: str, payload: dict[str, Any]) -> RecordedEvent:
    return replace(event, event_type=event_type, payload=payload)


def _edge(event: RecordedEvent, kind: str, a: str, b: str) -> RecordedEvent:
    return _as(event, "EdgeAsserted", {"edge_type": kind, "from_node": a, "to_node": b})


def _decision(event: RecordedEvent) -> Iterator[RecordedEvent]:
    p = event.payload
    node_id = f"decision:{p['decision_id']}"
    content = p["text"] + (f"\n\nRationale: {p['rationale']}" if p.get("rationale") else "")
    properties = {
        "decision_type": p.get("decision_type", "general"),
        "confidence": p.get("confidence"),
        "rationale": p.get("rationale", ""),
        "context_graph_ids": list(p.get("context_graph_ids", ())),
    }
    yield _as(
        event,
        "NodeAsserted",
        {
            "node_id": node_id,
            "node_type": "Decision",
            "name": " ".join(p["text"].split())[:200],
            "content": content,
            "properties": properties,
            "labels": ["decision"],
        },
    )
    for kind, key in (
        ("INFORMED_BY", "informed_by"),
        ("REFERENCES", "references"),
        ("SUPERSEDES", "supersedes"),
    ):
        for target in p.get(key, ()):
            yield _edge(event, kind, node_id, target)


def graph_events(events: Iterable[RecordedEvent]) -> Iterator[RecordedEvent]:
    """The graph-level events in ``events``, in order, with domain events rewritten."""
    for e in events:
        if e.event_type in GRAPH_EVENTS:
            yield e
        elif e.event_type == "PolicyDefined":
            p = e.payload
            yield _as(
                e,
                "NodeAsserted",
                {
                    "node_id": p["policy_id"],
                    "node_type": "Policy",
                    "name": p["name"],
                    "content": p.get("description", ""),
                    "properties": {"rule": p["rule"]},
                    "labels": ["policy"],
                },
            )
        elif e.event_type == "PolicyRetired":
            yield _as(e, "NodeRetired", {"node_id": e.payload["policy_id"]})
        elif e.event_type == "DecisionRecorded":
            yield from _decision(e)
