"""Knowledge events: nodes and edges of the graph asserted, changed, retired and retracted.

Node ids are ``{type}:{id}`` as in ADR-151 (``decision:42``, ``section:docs/prd.md#goals``).
The ADR-151 node and edge types are known; other types are accepted when they match the name
pattern, so the set stays open.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from kg.events.base import DomainEvent

NODE_TYPES = frozenset(
    {
        "Decision",
        "ErrorSolution",
        "SkillLearning",
        "Component",
        "Session",
        "File",
        "Function",
        "Track",
        "ADR",
        "Policy",
        "AuditEvent",
        "User",
        "Project",
        "Document",
        "Section",
        "Requirement",
        "Class",
        "Method",
    }
)
EDGE_TYPES = frozenset(
    {
        "INVOKES",
        "PRODUCES",
        "SOLVES",
        "BELONGS_TO",
        "DEFINES",
        "REFERENCES",
        "SIMILAR_TO",
        "CALLS",
        "USES",
        "GOVERNED_BY",
        "RECORDED_IN",
        "CREATED_BY",
        "CONTAINS",
        "PARENT_OF",
        "SUPERSEDES",
        "INFORMED_BY",
        "IMPORTS",
        "INHERITS",
        "IMPLEMENTS",
        "CO_CHANGED",
    }
)

_NODE_ID = re.compile(r"^[a-z][a-z0-9_]{0,39}:[^\x00-\x1f]{1,1000}$")
_NODE_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}$")
_EDGE_TYPE = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")


def _node_id(value: str) -> str:
    if not _NODE_ID.match(value):
        raise ValueError(
            f"node id {value[:80]!r} must look like 'type:id' (lowercase type prefix, e.g. "
            "'decision:42' or 'section:docs/prd.md#goals')"
        )
    return value


def _node_type(value: str) -> str:
    if not _NODE_TYPE.match(value):
        raise ValueError(
            f"node type {value[:80]!r} must be CamelCase letters and digits (e.g. 'Decision')"
        )
    return value


def _edge_type(value: str) -> str:
    if not _EDGE_TYPE.match(value):
        raise ValueError(f"edge type {value[:80]!r} must be UPPER_SNAKE_CASE (e.g. 'REFERENCES')")
    return value


NodeId = Annotated[str, AfterValidator(_node_id)]
NodeType = Annotated[str, AfterValidator(_node_type)]
EdgeType = Annotated[str, AfterValidator(_edge_type)]


def edge_id(edge_type: str, from_node: str, to_node: str) -> str:
    """Edges are identified by their type and ends: asserting the same edge again updates it."""
    return f"{from_node}|{edge_type}|{to_node}"


class NodeAsserted(DomainEvent):
    """A node exists with exactly this state (created, or changed: the full new state)."""

    event_type = "NodeAsserted"
    erasable_fields = ("content",)

    node_id: NodeId
    node_type: NodeType
    name: str = Field(max_length=1000)
    content: str = Field(default="", max_length=2_000_000)
    properties: dict[str, Any] = Field(default_factory=dict)
    labels: tuple[str, ...] = ()


class NodeRetired(DomainEvent):
    """A node no longer exists; its edges go with it. The log keeps its history."""

    event_type = "NodeRetired"

    node_id: NodeId
    reason: str = ""


class EdgeAsserted(DomainEvent):
    event_type = "EdgeAsserted"

    edge_type: EdgeType
    from_node: NodeId
    to_node: NodeId
    weight: float = Field(default=1.0, ge=0.0, le=1000.0)
    properties: dict[str, Any] = Field(default_factory=dict)

    @property
    def edge_id(self) -> str:
        return edge_id(self.edge_type, self.from_node, self.to_node)


class EdgeRetracted(DomainEvent):
    event_type = "EdgeRetracted"

    edge_type: EdgeType
    from_node: NodeId
    to_node: NodeId

    @property
    def edge_id(self) -> str:
        return edge_id(self.edge_type, self.from_node, self.to_node)


MAX_EDGES_PER_EVENT = 5000
"""Edges one :class:`EdgesAsserted` carries at most (a writer splits a longer list)."""


class AssertedEdge(BaseModel):
    """One edge of an :class:`EdgesAsserted`: the fields of :class:`EdgeAsserted`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    edge_type: EdgeType
    from_node: NodeId
    to_node: NodeId
    weight: float = Field(default=1.0, ge=0.0, le=1000.0)
    properties: dict[str, Any] = Field(default_factory=dict)


class EdgesAsserted(DomainEvent):
    """Several edges asserted at once, in order: exactly what as many :class:`EdgeAsserted`
    events would mean, in one event.

    Why: the edges of one source file (its CONTAINS, CALLS, IMPORTS, links) were two thirds of
    an ingest's events, and every event costs its own hash link, Merkle leaf, index entries and
    decoding, whatever its size. The ingest states a file's new or changed edges in one event;
    the projections and every reader expand it with :meth:`edge_events`.
    """

    event_type = "EdgesAsserted"

    edges: tuple[AssertedEdge, ...] = Field(min_length=1, max_length=MAX_EDGES_PER_EVENT)

    def edge_events(self) -> list[EdgeAsserted]:
        """The edges as the single-edge events they stand for (already validated)."""
        return [
            EdgeAsserted.model_construct(
                edge_type=e.edge_type,
                from_node=e.from_node,
                to_node=e.to_node,
                weight=e.weight,
                properties=e.properties,
            )
            for e in self.edges
        ]
