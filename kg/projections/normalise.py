"""Domain events that amount to graph changes, rewritten as the typed graph events they mean.

An :class:`~kg.events.knowledge.EdgesAsserted` becomes one change per edge, all of its position.

Policies are nodes; a decision is a node with INFORMED_BY, REFERENCES and SUPERSEDES edges.
Both graph projections read the log through :func:`graph_changes`, so this mapping exists once.
Every change is built from the decoded, upcast event (:attr:`RecordedEvent.event`), never from
the stored payload by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kg.events import memory
from kg.events.decision import DecisionRecorded
from kg.events.envelope import RecordedEvent
from kg.events.knowledge import (
    EdgeAsserted,
    EdgeRetracted,
    EdgesAsserted,
    NodeAsserted,
    NodeRetired,
)
from kg.events.policy import PolicyDefined, PolicyRetired

GRAPH_EVENTS = frozenset(
    {"NodeAsserted", "NodeRetired", "EdgeAsserted", "EdgeRetracted", "EdgesAsserted"}
)
MAPPED = frozenset(
    {"PolicyDefined", "PolicyChanged", "PolicyRetired", "DecisionRecorded"}
    | memory.MEMORY_EVENT_TYPES
)

Change = NodeAsserted | NodeRetired | EdgeAsserted | EdgeRetracted
#: The event types that become a NodeRetired (and so take the node's edges with it).
RETIRES_NODES = frozenset({"NodeRetired", "PolicyRetired", memory.MemoryEntityDeleted.event_type})


@dataclass(frozen=True, slots=True)
class GraphChange:
    """One change to the graph and the stored event it comes from (its place in the log)."""

    source: RecordedEvent
    change: Change

    @property
    def kind(self) -> str:
        return self.change.event_type


def _edge(source: RecordedEvent, kind: str, a: str, b: str) -> GraphChange:
    # Built from fields the domain event validated: constructed, not validated again.
    return GraphChange(source, EdgeAsserted.model_construct(edge_type=kind, from_node=a, to_node=b))


def _decision(source: RecordedEvent, d: DecisionRecorded) -> Iterator[GraphChange]:
    content = d.text + (f"\n\nRationale: {d.rationale}" if d.rationale else "")
    properties = {
        "decision_type": d.decision_type,
        "confidence": d.confidence,
        "rationale": d.rationale,
        "context_graph_ids": list(d.context_graph_ids),
    }
    node = NodeAsserted.model_construct(
        node_id=d.node_id,
        node_type="Decision",
        name=" ".join(d.text.split())[:200],
        content=content,
        properties=properties,
        labels=("decision",),
    )
    yield GraphChange(source, node)
    for kind, targets in (
        ("INFORMED_BY", d.informed_by),
        ("REFERENCES", d.references),
        ("SUPERSEDES", d.supersedes),
    ):
        for target in targets:
            yield _edge(source, kind, d.node_id, target)


#: Selectors added by PolicyDefined v2: left out of the projected rule when empty, so a policy
#: projected before them is byte for byte what a rebuild projects now.
_RULE_V2_KEYS = ("paths", "node_ids", "actors")


def policy_properties(p: PolicyDefined) -> dict[str, Any]:
    """A Policy node's properties: its rule, and the policy file declaring it, if any."""
    rule = p.rule.model_dump(mode="json")
    for key in _RULE_V2_KEYS:  # a rule that does not use them projects as it did before v2
        if not rule[key]:
            del rule[key]
    properties: dict[str, Any] = {"rule": rule}
    if p.origin:
        properties["origin"] = p.origin
    return properties


def _policy(source: RecordedEvent, p: PolicyDefined) -> GraphChange:
    node = NodeAsserted.model_construct(
        node_id=p.policy_id,
        node_type="Policy",
        name=p.name,
        content=p.description,
        properties=policy_properties(p),
        labels=("policy",),
    )
    return GraphChange(source, node)


def _memory(source: RecordedEvent, event: memory.MemoryEvent) -> GraphChange:
    """A memory entity is a ``MemoryEntity`` node (its observations, one a line, are its
    content); a relation is a ``MEMORY_*`` edge that keeps the relation type as written."""
    if isinstance(event, memory.MemoryEntityDeleted):
        return GraphChange(source, NodeRetired.model_construct(node_id=memory.node_id(event.name)))
    if isinstance(event, memory.MemoryRelationCreated | memory.MemoryRelationDeleted):
        kind = memory.edge_type(event.relation_type)
        a, b = memory.node_id(event.from_name), memory.node_id(event.to_name)
        if isinstance(event, memory.MemoryRelationDeleted):
            retracted = EdgeRetracted.model_construct(edge_type=kind, from_node=a, to_node=b)
            return GraphChange(source, retracted)
        asserted = EdgeAsserted.model_construct(
            edge_type=kind, from_node=a, to_node=b,
            properties={"relation_type": event.relation_type},
        )  # fmt: skip
        return GraphChange(source, asserted)
    node = NodeAsserted.model_construct(
        node_id=memory.node_id(event.name),
        node_type=memory.NODE_TYPE,
        name=event.name,
        content="\n".join(event.observations),
        properties={"entity_type": event.entity_type, "observations": list(event.observations)},
        labels=memory.entity_labels(event.entity_type),
    )
    return GraphChange(source, node)


# The graph events themselves, by class: a replay tests every event, and ``isinstance`` on a
# pydantic model goes through ABCMeta (a union of four: four Python-level calls per event).
_AS_IS = frozenset({NodeAsserted, NodeRetired, EdgeAsserted, EdgeRetracted})


def graph_changes(events: Iterable[RecordedEvent]) -> Iterator[GraphChange]:
    """The graph-level changes in ``events``, in order, with domain events rewritten."""
    for e in events:
        if e.event_type not in GRAPH_EVENTS and e.event_type not in MAPPED:
            continue
        event = e.event
        if type(event) in _AS_IS:
            yield GraphChange(e, event)  # type: ignore[arg-type]
        elif type(event) is EdgesAsserted:  # one event, many edges: each its own change
            for edge in event.edge_events():
                yield GraphChange(e, edge)
        elif isinstance(event, PolicyDefined):
            yield _policy(e, event)
        elif isinstance(event, PolicyRetired):
            yield GraphChange(e, NodeRetired.model_construct(node_id=event.policy_id))
        elif isinstance(event, DecisionRecorded):
            yield from _decision(e, event)
        elif isinstance(event, memory.MEMORY_EVENTS):
            yield _memory(e, event)
