"""A :class:`~kg.context.builder.GraphSource` held in memory, for builder tests and tools that
need no PostgreSQL.

It answers every question the builder asks exactly as the SQL reader does (the same ordering,
the same per-node fan-out cap, the same tie-breaks), and the contract tests run the same builds
against both and compare them. Semantic search is plain cosine similarity over the vectors the
caller gives (no full-text leg): enough to test the builder, not a search engine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from kg.events.base import DomainEvent
from kg.events.knowledge import EdgeAsserted, EdgesAsserted, NodeAsserted, edge_id
from kg.events.policy import PolicyDefined
from kg.policies.model import Policy, document_paths
from kg.projections.embedding_backlog import EmbeddingState
from kg.projections.graph_reader import EdgeRow, NodeRow
from kg.projections.normalise import policy_properties

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class MemoryGraph:
    """Nodes, edges and policies of one project, with the log position they stand for."""

    project_id: str = "default"
    position: int = 0
    nodes_by_id: dict[str, NodeRow] = field(default_factory=dict)
    edges_by_id: dict[str, EdgeRow] = field(default_factory=dict)
    policy_list: list[Policy] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    # Edge ids by the node they leave and the node they reach: a hop reads only its frontier's.
    _out: dict[str, set[str]] = field(default_factory=dict)
    _in: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def from_events(
        cls, events: Iterable[DomainEvent], *, project_id: str = "default", at: datetime = EPOCH
    ) -> MemoryGraph:
        """The graph the projections would build from ``events`` appended at time ``at``."""
        graph = cls(project_id=project_id)
        for event in events:
            graph.position += 1
            if isinstance(event, NodeAsserted):
                graph.add_node(event, at)
            elif isinstance(event, EdgeAsserted):
                graph.add_edge(event.edge_type, event.from_node, event.to_node, event.weight)
            elif isinstance(event, EdgesAsserted):
                for e in event.edges:
                    graph.add_edge(e.edge_type, e.from_node, e.to_node, e.weight)
            elif isinstance(event, PolicyDefined):
                rule = policy_properties(event)
                node = NodeAsserted(
                    node_id=event.policy_id,
                    node_type="Policy",
                    name=event.name,
                    content=event.description,
                    properties=rule,
                    labels=("policy",),
                )
                graph.add_node(node, at)
                graph.policy_list = [p for p in graph.policy_list if p.policy_id != event.policy_id]
                graph.policy_list.append(
                    Policy(
                        event.policy_id,
                        event.name,
                        event.rule,
                        project_id,
                        graph.position,
                        event.origin,
                        event.description,
                    )
                )
        return graph

    def add_node(self, node: NodeAsserted, at: datetime = EPOCH) -> None:
        self.nodes_by_id[node.node_id] = NodeRow(
            node.node_id,
            node.node_type,
            node.name,
            node.content,
            dict(node.properties),
            tuple(node.labels),
            at,
            (),
        )

    def add_edge(self, kind: str, a: str, b: str, weight: float = 1.0) -> None:
        key = edge_id(kind, a, b)
        self.edges_by_id[key] = EdgeRow(key, kind, a, b, weight)
        self._out.setdefault(a, set()).add(key)
        self._in.setdefault(b, set()).add(key)

    def _edges(self, index: dict[str, set[str]], node_id: str) -> list[EdgeRow]:
        return [self.edges_by_id[k] for k in index.get(node_id, ())]

    def _row(self, node_id: str) -> NodeRow:
        """The node with what the SQL reader derives from edges (governing policies, successors)."""
        row = self.nodes_by_id[node_id]
        out, into = self._edges(self._out, node_id), self._edges(self._in, node_id)
        governed = sorted(e.to_node for e in out if e.edge_type == "GOVERNED_BY")
        successors = sorted(e.from_node for e in into if e.edge_type == "SUPERSEDES")
        return replace(row, governed_by=tuple(governed), superseded_by=tuple(successors))

    # The GraphSource protocol.

    async def as_of(self) -> tuple[int, datetime | None]:
        newest = max((n.updated_at for n in self.nodes_by_id.values()), default=None)
        return self.position, newest

    async def policies(self) -> list[Policy]:
        return sorted(self.policy_list, key=lambda p: p.policy_id)

    async def document_types(self, types: Sequence[str]) -> dict[str, str]:
        wanted = set(types)
        return document_paths(
            (n.node_id, n.node_type) for n in self.nodes_by_id.values() if n.node_type in wanted
        )

    async def nodes(self, node_ids: Sequence[str]) -> list[NodeRow]:
        return [self._row(n) for n in dict.fromkeys(node_ids) if n in self.nodes_by_id]

    async def neighbours(
        self,
        frontier: Sequence[str],
        *,
        exclude: Sequence[str],
        edge_types: Sequence[str],
        node_types: Sequence[str],
        limit: int,
        fanout: int | None = None,
    ) -> list[tuple[EdgeRow, NodeRow]]:
        cap = min(fanout or limit, limit)
        excluded = set(exclude)

        def strongest(edges: Iterable[tuple[EdgeRow, str]]) -> list[tuple[EdgeRow, str]]:
            kept = [
                (e, other)
                for e, other in edges
                if (not edge_types or e.edge_type in edge_types) and other not in excluded
            ]
            return sorted(kept, key=lambda x: (-x[0].weight, x[0].edge_id))[:cap]

        hop: list[tuple[EdgeRow, str]] = []
        for node in dict.fromkeys(frontier):
            hop += strongest((e, e.to_node) for e in self._edges(self._out, node))
            hop += strongest((e, e.from_node) for e in self._edges(self._in, node))
        picked = sorted(hop, key=lambda x: (-x[0].weight, x[0].edge_id))[:limit]
        return [
            (e, self._row(other))
            for e, other in picked
            if other in self.nodes_by_id
            and (not node_types or self.nodes_by_id[other].node_type in node_types)
        ]

    async def edges_among(
        self, node_ids: Sequence[str], edge_types: Sequence[str]
    ) -> list[EdgeRow]:
        among = set(node_ids)
        return sorted(
            (
                e
                for e in self.edges_by_id.values()
                if e.from_node in among
                and e.to_node in among
                and (not edge_types or e.edge_type in edge_types)
            ),
            key=lambda e: e.edge_id,
        )

    async def embedding_state(self) -> EmbeddingState:
        """Nothing waits: every node the caller gave a vector has it."""
        return EmbeddingState(None, 0)

    async def semantic(
        self, text: str, vector: str | None, k: int, node_types: Sequence[str]
    ) -> list[tuple[str, float, float]]:
        if vector is None:  # no full-text leg here (see the module docstring)
            return []
        query = [float(x) for x in vector.strip("[]").split(",") if x]
        scored = []
        for node_id, v in self.vectors.items():
            row = self.nodes_by_id.get(node_id)
            if row is None or (node_types and row.node_type not in node_types):
                continue
            norm = math.sqrt(sum(x * x for x in v) * sum(x * x for x in query)) or 1.0
            similarity = sum(a * b for a, b in zip(v, query, strict=False)) / norm
            scored.append((node_id, similarity, similarity))
        return sorted(scored, key=lambda s: (-s[2], s[0]))[:k]
