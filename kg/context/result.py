"""What an agent receives: the context graph, its provenance and its governance."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class ContextNode:
    node_id: str
    node_type: str
    name: str
    content: str
    properties: dict[str, Any]
    labels: tuple[str, ...]
    score: float
    reason: str
    hop: int
    redacted: bool = False
    #: the headings above a section (``Product requirements > Non-Functional Requirements``):
    #: its file is in ``node_id``, its own heading is ``name``
    breadcrumb: str = ""
    #: True when ``content`` holds the passages that match the task, not the whole text
    partial: bool = False
    #: not current: ``superseded``, ``deprecated``, ... (served without content)
    status: str = ""
    #: the nodes that replace this one, as far as policies let this graph name them
    superseded_by: tuple[str, ...] = ()
    #: nodes restating this one (near-duplicates), cited here instead of shown
    copies: tuple[str, ...] = ()


@dataclass(frozen=True)
class ContextEdge:
    edge_id: str
    edge_type: str
    from_node: str
    to_node: str
    weight: float


@dataclass(frozen=True)
class GovernanceSummary:
    policies_applied: tuple[str, ...]
    excluded_by_policy: dict[str, int]
    redacted_by_policy: dict[str, int]
    excluded_count: int
    redacted_count: int
    sensitive_count: int
    allowed_actions: dict[str, dict[str, Any]]  # policy id -> {"actions": [...], "nodes": [...]}


@dataclass(frozen=True)
class Budget:
    max_nodes: int
    max_depth: int
    max_edges: int
    token_budget: int | None
    nodes_used: int
    edges_used: int
    depth_reached: int
    tokens_used: int
    truncated: bool
    #: estimated tokens of the nodes and edges as JSON (the structured result); both this and
    #: ``tokens_used`` (the rendering) stay within ``token_budget``
    structured_tokens: int = 0


@dataclass(frozen=True)
class ContextGraph:
    mode: str
    nodes: tuple[ContextNode, ...]
    edges: tuple[ContextEdge, ...]
    governance: GovernanceSummary
    budget: Budget
    as_of_position: int
    rendering: str
    token_estimate: int
    content_hash: str
    semantic_anchors: tuple[tuple[str, float], ...] = ()
    embedder: str | None = None
    warnings: tuple[str, ...] = ()
    context_graph_id: str = field(default="")
    #: MUST directives that govern the graph's files (kg.directives.context): node_id, text,
    #: source; absent from to_dict() when there are none
    directives: tuple[dict[str, str], ...] = ()
    #: newer log events not projected yet when the graph was built (0: current); not part of
    #: the graph or its hash (a replay at ``as_of_position`` reproduces it all the same)
    behind: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The graph as JSON-ready data, lean: a node's ``properties`` and ``labels`` are left
        out when empty and ``redacted`` when false, and an edge is named by its type and ends
        (its id is ``from|type|to``, as in the graph-query tools). MCP clients validate every
        value of a result against its schema (the Python SDK's at ~7 us each) and a 128-node
        graph has thousands; these fields were a fifth of them. Built field by field:
        ``asdict`` deep-copies every value and cost more than the build's own Python work."""
        data = asdict(replace(self, nodes=(), edges=()))
        data["nodes"] = [_node_dict(n) for n in self.nodes]
        data["edges"] = [edge_dict(e) for e in self.edges]
        data["semantic_anchors"] = [list(a) for a in self.semantic_anchors]
        data["governance"]["policies_applied"] = list(self.governance.policies_applied)
        data["warnings"] = list(self.warnings)
        if self.directives:
            data["directives"] = [dict(d) for d in self.directives]
        else:
            del data["directives"]
        return data


def type_in_id(n: ContextNode) -> bool:
    """True when the node's type is its id's prefix capitalised (``section:...`` is a
    Section): then neither form repeats it (about 5 tokens of each node's ~95 in the structured
    result, issue 31). Exact, so a client recovers it (``ADR`` for ``adr:...`` is shown)."""
    prefix, sep, _ = n.node_id.partition(":")
    return bool(sep) and prefix.capitalize() == n.node_type


def _node_dict(n: ContextNode) -> dict[str, Any]:
    node: dict[str, Any] = {"node_id": n.node_id}
    if not type_in_id(n):
        node["node_type"] = n.node_type
    node |= {
        "name": n.name,
        "content": n.content,
        "score": n.score,
        "reason": n.reason,
    }
    if n.hop:
        node["hop"] = n.hop
    if n.properties:
        node["properties"] = n.properties
    if n.labels:
        node["labels"] = list(n.labels)
    if n.redacted:
        node["redacted"] = True
    if n.breadcrumb:
        node["breadcrumb"] = n.breadcrumb
    if n.partial:
        node["partial"] = True
    if n.status:
        node["status"] = n.status
    if n.superseded_by:
        node["superseded_by"] = list(n.superseded_by)
    if n.copies:
        node["copies"] = list(n.copies)
    return node


def node_dict(n: ContextNode) -> dict[str, Any]:
    """One node as the structured result carries it."""
    return _node_dict(n)


def edge_dict(e: ContextEdge) -> dict[str, Any]:
    return {
        "edge_type": e.edge_type,
        "from_node": e.from_node,
        "to_node": e.to_node,
        "weight": e.weight,
    }
