"""Typed record queries of the read model: context graphs, their usage, decisions, positions.

These return ids, positions and stored events, never a node's name or content: those come only
through :class:`kg.read.governed.Governed`. All run inside a :class:`kg.read.reader.Snapshot`'s
transaction (tenant-scoped, read-only) and filter on tenant and project in SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from kg.config import Scope
from kg.events.envelope import RecordedEvent
from kg.events.store import SELECT_EVENT, record_from_row

_GRAPH_COLS = (
    "context_graph_id, mode, node_ids, position, built_at, actor, session_id, content_hash"
)


@dataclass(frozen=True)
class GraphRecord:
    """A logged context graph as the ``context_graphs`` projection holds it."""

    context_graph_id: str
    mode: str
    node_ids: tuple[str, ...]
    position: int
    built_at: datetime | None
    actor: str | None
    session_id: str | None
    content_hash: str


@dataclass(frozen=True)
class NodePositions:
    """The log positions of the events that first and last changed a node."""

    first: int
    last: int


def _graph(r: asyncpg.Record) -> GraphRecord:
    return GraphRecord(
        r["context_graph_id"], r["mode"], tuple(r["node_ids"]), r["position"], r["built_at"],
        r["actor"], r["session_id"], r["content_hash"],
    )  # fmt: skip


class Records:
    def __init__(self, conn: asyncpg.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope

    @property
    def _ids(self) -> tuple[str, str]:
        return self.scope.tenant_id, self.scope.project_id

    async def context_graphs(self, graph_ids: Sequence[str]) -> list[GraphRecord]:
        """The named context graphs of this project, in log order."""
        rows = await self.conn.fetch(
            f"SELECT {_GRAPH_COLS} FROM context_graphs WHERE tenant_id = $1 AND project_id = $2 "
            "AND context_graph_id = ANY($3::text[]) ORDER BY position",
            *self._ids,
            list(graph_ids),
        )
        return [_graph(r) for r in rows]

    async def graphs_containing(self, node_id: str) -> list[GraphRecord]:
        """The context graphs that contained ``node_id``, in log order."""
        rows = await self.conn.fetch(
            f"SELECT {_GRAPH_COLS} FROM context_graphs WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_ids @> ARRAY[$3::text] ORDER BY position",
            *self._ids,
            node_id,
        )
        return [_graph(r) for r in rows]

    async def used_nodes(self, graph_ids: Sequence[str]) -> dict[str, set[str]]:
        """Per context graph: the nodes tool calls reported using (graphs whose usage named no
        nodes are absent)."""
        rows = await self.conn.fetch(
            "SELECT context_graph_id, node_ids FROM context_graph_usage WHERE tenant_id = $1 "
            "AND project_id = $2 AND context_graph_id = ANY($3::text[]) "
            "AND cardinality(node_ids) > 0",
            *self._ids,
            list(graph_ids),
        )
        used: dict[str, set[str]] = {}
        for r in rows:
            used.setdefault(r["context_graph_id"], set()).update(r["node_ids"])
        return used

    async def existing(self, node_ids: Sequence[str]) -> set[str]:
        """Those of ``node_ids`` that are nodes of this project (policies aside: for checking
        references, never shown)."""
        rows = await self.conn.fetch(
            "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_id = ANY($3::text[])",
            *self._ids,
            list(node_ids),
        )
        return {r["node_id"] for r in rows}

    async def positions(self, node_ids: Sequence[str]) -> dict[str, NodePositions]:
        rows = await self.conn.fetch(
            "SELECT node_id, first_position, last_position FROM kg_nodes WHERE tenant_id = $1 "
            "AND project_id = $2 AND node_id = ANY($3::text[])",
            *self._ids,
            list(node_ids),
        )
        return {r["node_id"]: NodePositions(r["first_position"], r["last_position"]) for r in rows}

    async def events_at(self, positions: Sequence[int]) -> dict[int, RecordedEvent]:
        """The tenant's stored events at ``positions`` (decoded on use: ``.event``)."""
        rows = await self.conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND position = ANY($2)",
            self.scope.tenant_id,
            list(positions),
        )
        return {r["position"]: record_from_row(r) for r in rows}

    async def later_decisions(self, decision_id: str, graph_ids: Sequence[str]) -> list[str]:
        """Decisions informed by any of ``graph_ids`` or superseding ``decision_id``."""
        rows = await self.conn.fetch(
            "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_type = 'Decision' AND properties -> 'context_graph_ids' ?| $3::text[] "
            "UNION SELECT from_node FROM kg_edges WHERE tenant_id = $1 AND project_id = $2 "
            "AND edge_type = 'SUPERSEDES' AND to_node = $4",
            *self._ids,
            list(graph_ids),
            decision_id,
        )
        return [r["node_id"] for r in rows]
