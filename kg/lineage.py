"""``trace_decision_lineage``: what a decision was based on, and what it went on to inform.

Upstream: decision -> context graphs it used -> the nodes in them it was informed by -> their
sources (the provenance recorded with the events that asserted them: documents and commits,
sessions, backfilled rows); and the decisions it supersedes. Downstream: later context graphs
that contained the decision -> decisions they informed, and decisions superseding it. Every step
names the log position, time and actor that created it. Nodes pass through ``kg.policies``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

import asyncpg

from kg.errors import NotFoundError, ValidationError
from kg.events.decision import DecisionRecorded
from kg.events.envelope import RecordedEvent
from kg.events.store import SELECT_EVENT, record_from_row
from kg.graph_queries import governed_reader
from kg.policies.evaluate import Governance
from kg.projections.graph_reader import GraphReader
from kg.runtime import Runtime
from kg.validation import MAX_ID_CHARS, check_text, clip

DIRECTIONS = ("upstream", "downstream", "both")


@dataclass(frozen=True)
class LineageStep:
    id: str
    kind: str  # decision | context_graph | node | source
    label: str
    position: int | None = None
    recorded_at: str | None = None
    actor: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class LineageLink:
    from_id: str
    to_id: str
    relation: str


@dataclass
class Lineage:
    decision_id: str
    direction: str
    depth: int
    steps: dict[str, LineageStep] = field(default_factory=dict)
    links: list[LineageLink] = field(default_factory=list)
    excluded_by_policy: int = 0

    def add(self, step: LineageStep) -> None:
        self.steps.setdefault(step.id, step)

    def link(self, a: str, b: str, relation: str) -> None:
        candidate = LineageLink(a, b, relation)
        if candidate not in self.links:
            self.links.append(candidate)

    def to_dict(self) -> dict[str, Any]:
        return {
            "decision_id": self.decision_id,
            "direction": self.direction,
            "depth": self.depth,
            "steps": [_public(s) for s in self.steps.values()],
            "links": [asdict(link) for link in self.links],
            "excluded_by_policy": self.excluded_by_policy,
        }


def _public(step: LineageStep) -> dict[str, Any]:
    """A step as shown: a decision's raw ``informed_by`` list stays internal, since a policy
    added later may deny some of those nodes; the CONTAINED links show the allowed ones."""
    data = asdict(step)
    data["details"] = {k: v for k, v in step.details.items() if k != "informed_by"}
    return data


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


class _Tracer:
    def __init__(self, rt: Runtime, reader: GraphReader, gov: Governance, lineage: Lineage) -> None:
        self.rt, self.reader, self.gov, self.lineage = rt, reader, gov, lineage
        self.conn: asyncpg.Connection = reader.conn
        self.scope = rt.scope

    async def events_at(self, positions: Sequence[int]) -> dict[int, RecordedEvent]:
        rows = await self.conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND position = ANY($2)",
            self.scope.tenant_id,
            list(positions),
        )
        return {r["position"]: record_from_row(r) for r in rows}

    async def decisions(self, node_ids: Sequence[str]) -> list[LineageStep]:
        rows = await self.conn.fetch(
            "SELECT node_id, name, properties, first_position FROM kg_nodes WHERE tenant_id = $1 "
            "AND project_id = $2 AND node_id = ANY($3) AND node_type = 'Decision'",
            self.scope.tenant_id,
            self.scope.project_id,
            list(node_ids),
        )
        events = await self.events_at([r["first_position"] for r in rows])
        steps = []
        for r in rows:
            e = events.get(r["first_position"])
            d = e.event_as(DecisionRecorded) if e else None
            steps.append(
                LineageStep(
                    r["node_id"],
                    "decision",
                    r["name"],
                    r["first_position"],
                    _iso(e.recorded_at) if e else None,
                    e.meta.actor if e else None,
                    {
                        "decision_type": r["properties"].get("decision_type"),
                        "confidence": r["properties"].get("confidence"),
                        "context_graph_ids": list(d.context_graph_ids) if d else [],
                        "informed_by": list(d.informed_by) if d else [],
                        "supersedes": list(d.supersedes) if d else [],
                        "source": e.meta.source if e else None,
                    },
                )
            )
        return sorted(steps, key=lambda s: s.id)

    async def graphs(self, where: str, arg: object) -> list[asyncpg.Record]:
        return list(
            await self.conn.fetch(
                "SELECT context_graph_id, mode, node_ids, position, built_at, actor, session_id, "
                "content_hash FROM context_graphs WHERE tenant_id = $1 AND project_id = $2 "
                f"AND {where} "
                "ORDER BY position",
                self.scope.tenant_id,
                self.scope.project_id,
                arg,
            )
        )

    def add_graph(self, g: asyncpg.Record) -> str:
        step_id = f"context_graph:{g['context_graph_id']}"
        self.lineage.add(
            LineageStep(
                step_id,
                "context_graph",
                f"{g['mode']} context graph, {len(g['node_ids'])} nodes",
                g["position"],
                _iso(g["built_at"]),
                g["actor"],
                {"session_id": g["session_id"], "content_hash": g["content_hash"]},
            )
        )
        return step_id

    async def upstream(self, decision: LineageStep, depth: int) -> None:
        if depth <= 0:
            return
        if decision.details.get("source"):  # a backfilled decision: its legacy row
            source_id = f"source:{decision.details['source']}"
            self.lineage.add(LineageStep(source_id, "source", decision.details["source"]))
            self.lineage.link(decision.id, source_id, "SOURCED_FROM")
        informed_by = set(decision.details["informed_by"])
        graphs = await self.graphs(
            "context_graph_id = ANY($3)", decision.details["context_graph_ids"]
        )
        for g in graphs:
            self.lineage.link(decision.id, self.add_graph(g), "INFORMED_BY")
        if depth >= 2 and informed_by:
            await self.nodes_and_sources(graphs, informed_by, with_sources=depth >= 3)
        superseded = await self.decisions(decision.details["supersedes"])
        for older in superseded:
            self.lineage.add(older)
            self.lineage.link(decision.id, older.id, "SUPERSEDES")
            await self.upstream(older, depth - 1)

    async def nodes_and_sources(
        self, graphs: Sequence[asyncpg.Record], informed_by: set[str], with_sources: bool
    ) -> None:
        rows = {r.node_id: r for r in await self.reader.nodes(sorted(informed_by))}
        meta = await self.conn.fetch(
            "SELECT node_id, last_position FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_id = ANY($3)",
            self.scope.tenant_id,
            self.scope.project_id,
            sorted(informed_by),
        )
        last = {r["node_id"]: r["last_position"] for r in meta}
        events = await self.events_at(sorted(set(last.values())))
        allowed: set[str] = set()
        for node_id in sorted(informed_by):
            row = rows.get(node_id)
            if row is None:
                self.lineage.add(LineageStep(node_id, "node", "(retired since)"))
                allowed.add(node_id)
                continue
            verdict = self.gov.admit(row.node_type, row.labels, row.governed_by)
            if verdict.denied:
                continue
            allowed.add(node_id)
            e = events.get(last[node_id])
            source = e.meta.source if e else None
            self.lineage.add(
                LineageStep(
                    node_id,
                    "node",
                    verdict.shown_name(row.name),
                    last[node_id],
                    _iso(e.recorded_at) if e else None,
                    e.meta.actor if e else None,
                    {"node_type": row.node_type, "source": source},
                )
            )
            if with_sources and source:
                source_id = f"source:{source}"
                self.lineage.add(LineageStep(source_id, "source", source))
                self.lineage.link(node_id, source_id, "SOURCED_FROM")
        self.lineage.excluded_by_policy = self.gov.excluded_nodes
        for g in graphs:
            for node_id in g["node_ids"]:
                if node_id in allowed:
                    self.lineage.link(
                        f"context_graph:{g['context_graph_id']}", node_id, "CONTAINED"
                    )

    async def downstream(self, decision: LineageStep, depth: int) -> None:
        if depth <= 0:
            return
        graphs = await self.graphs("node_ids @> ARRAY[$3::text]", decision.id)
        graph_ids = [g["context_graph_id"] for g in graphs]
        for g in graphs:
            self.lineage.link(decision.id, self.add_graph(g), "SHOWN_IN")
        later_ids = await self.conn.fetch(
            "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_type = 'Decision' AND properties -> 'context_graph_ids' ?| $3::text[] "
            "UNION SELECT from_node FROM kg_edges WHERE tenant_id = $1 AND project_id = $2 "
            "AND edge_type = 'SUPERSEDES' AND to_node = $4",
            self.scope.tenant_id,
            self.scope.project_id,
            graph_ids,
            decision.id,
        )
        for later in await self.decisions([r["node_id"] for r in later_ids]):
            self.lineage.add(later)
            if decision.id in later.details["supersedes"]:
                self.lineage.link(later.id, decision.id, "SUPERSEDES")
            for graph_id in later.details["context_graph_ids"]:
                if graph_id in graph_ids:
                    self.lineage.link(f"context_graph:{graph_id}", later.id, "INFORMED")
            await self.downstream(later, depth - 1)


async def trace_decision_lineage(
    rt: Runtime, decision_id: str, direction: str = "upstream", depth: int = 3
) -> Lineage:
    if direction not in DIRECTIONS:
        raise ValidationError(
            f"direction {clip(direction)} is unknown: use upstream, downstream or both"
        )
    if not 1 <= depth <= 10:
        raise ValidationError(f"depth {depth} is out of range: use 1 to 10")
    check_text("decision_id", decision_id, MAX_ID_CHARS)
    node_id = decision_id if decision_id.startswith("decision:") else f"decision:{decision_id}"
    await rt.catch_up()
    lineage = Lineage(node_id, direction, depth)
    async with governed_reader(rt) as (reader, gov):
        tracer = _Tracer(rt, reader, gov, lineage)
        found = await tracer.decisions([node_id])
        if not found:
            raise NotFoundError(
                f"decision {clip(node_id)} not found in this project: use the decision_id "
                "returned by record_decision"
            )
        lineage.add(found[0])
        if direction in ("upstream", "both"):
            await tracer.upstream(found[0], depth)
        if direction in ("downstream", "both"):
            await tracer.downstream(found[0], depth)
    return lineage
