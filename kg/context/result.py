"""What an agent receives: the context graph, its provenance and its governance."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
    token_budget: int | None
    nodes_used: int
    depth_reached: int
    tokens_used: int
    truncated: bool


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

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
