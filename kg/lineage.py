"""``trace_decision_lineage``: what a decision was based on, and what it went on to inform.

Upstream: decision -> context graphs it used -> the nodes in them it was informed by -> their
sources (the provenance recorded with the events that asserted them: documents and commits,
sessions, backfilled rows); and the decisions it supersedes. Downstream: later context graphs
that contained the decision -> decisions they informed, and decisions superseding it. Every step
names the log position, time and actor that created it. Nodes pass through ``kg.policies``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

from kg.errors import PolicyDeniedError, ValidationError
from kg.events.decision import DecisionRecorded
from kg.read.governed import Governed
from kg.read.names import UnknownNodeError
from kg.read.records import GraphRecord, Records
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
    """Walks the lineage through one snapshot: record queries for graphs, positions and
    events, the policy-checked view for every node (decisions included) it names."""

    def __init__(self, records: Records, governed: Governed, lineage: Lineage) -> None:
        self.records, self.governed, self.lineage = records, governed, lineage

    async def decisions(self, node_ids: Sequence[str]) -> list[LineageStep]:
        found = [d for d in await self.governed.nodes(node_ids) if d.row.node_type == "Decision"]
        positions = await self.records.positions([d.node_id for d in found])
        events = await self.records.events_at([p.first for p in positions.values()])
        steps = []
        for node in found:
            first = positions[node.node_id].first
            e = events.get(first)
            d = e.event_as(DecisionRecorded) if e else None
            shown = node.visible
            steps.append(
                LineageStep(
                    node.node_id,
                    "decision",
                    shown.name,
                    first,
                    _iso(e.recorded_at) if e else None,
                    e.meta.actor if e else None,
                    {
                        "decision_type": shown.properties.get("decision_type"),
                        "confidence": shown.properties.get("confidence"),
                        "context_graph_ids": list(d.context_graph_ids) if d else [],
                        "informed_by": list(d.informed_by) if d else [],
                        "supersedes": list(d.supersedes) if d else [],
                        "source": e.meta.source if e else None,
                        "erased": bool(e and e.erased),
                    },
                )
            )
        return sorted(steps, key=lambda s: s.id)

    def add_graph(self, g: GraphRecord) -> str:
        step_id = f"context_graph:{g.context_graph_id}"
        self.lineage.add(
            LineageStep(
                step_id,
                "context_graph",
                f"{g.mode} context graph, {len(g.node_ids)} nodes",
                g.position,
                _iso(g.built_at),
                g.actor,
                {"session_id": g.session_id, "content_hash": g.content_hash},
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
        graphs = await self.records.context_graphs(decision.details["context_graph_ids"])
        for g in graphs:
            self.lineage.link(decision.id, self.add_graph(g), "INFORMED_BY")
        if depth >= 2 and informed_by:
            await self.nodes_and_sources(decision.id, graphs, informed_by, with_sources=depth >= 3)
        superseded = await self.decisions(decision.details["supersedes"])
        for older in superseded:
            self.lineage.add(older)
            self.lineage.link(decision.id, older.id, "SUPERSEDES")
            await self.upstream(older, depth - 1)

    async def hide_withheld_references(self) -> None:
        """Drop from the decisions' ``supersedes`` the ids of decisions a policy denies (the
        walk may not have reached them all: they are decided here, in one query)."""
        named = {
            s for step in self.lineage.steps.values() for s in step.details.get("supersedes", ())
        }
        await self.governed.nodes(sorted(named))
        withheld = self.governed.withheld
        for step_id, step in list(self.lineage.steps.items()):
            ids = step.details.get("supersedes", ())
            if withheld.intersection(ids):
                kept = [s for s in ids if s not in withheld]
                self.lineage.steps[step_id] = replace(
                    step, details={**step.details, "supersedes": kept}
                )

    async def nodes_and_sources(
        self,
        decision_id: str,
        graphs: Sequence[GraphRecord],
        informed_by: set[str],
        with_sources: bool,
    ) -> None:
        nodes = {n.node_id: n for n in await self.governed.nodes(sorted(informed_by))}
        positions = await self.records.positions(sorted(nodes))
        events = await self.records.events_at(sorted({p.last for p in positions.values()}))
        withheld = self.governed.withheld
        allowed: set[str] = set()
        for node_id in sorted(informed_by - withheld):
            allowed.add(node_id)
            node = nodes.get(node_id)
            if node is None:
                self.lineage.add(LineageStep(node_id, "node", "(retired since)"))
                continue
            last = positions[node_id].last
            e = events.get(last)
            source = e.meta.source if e else None
            self.lineage.add(
                LineageStep(
                    node_id,
                    "node",
                    node.visible.name,
                    last,
                    _iso(e.recorded_at) if e else None,
                    e.meta.actor if e else None,
                    # The step stays (position, time, actor); its content may be erased.
                    {
                        "node_type": node.row.node_type,
                        "source": source,
                        "erased": bool(e and e.erased),
                    },
                )
            )
            if with_sources and source:
                source_id = f"source:{source}"
                self.lineage.add(LineageStep(source_id, "source", source))
                self.lineage.link(node_id, source_id, "SOURCED_FROM")
        contained: set[str] = set()
        for g in graphs:
            for node_id in g.node_ids:
                if node_id in allowed:
                    self.lineage.link(f"context_graph:{g.context_graph_id}", node_id, "CONTAINED")
                    contained.add(node_id)
        # What informed the decision outside any context graph (the directives a
        # query_directives result served): linked to the decision itself, or no path in the
        # tree would lead to it.
        for node_id in sorted(allowed - contained):
            self.lineage.link(decision_id, node_id, "FOLLOWED")

    async def downstream(self, decision: LineageStep, depth: int) -> None:
        if depth <= 0:
            return
        graphs = await self.records.graphs_containing(decision.id)
        graph_ids = [g.context_graph_id for g in graphs]
        for g in graphs:
            self.lineage.link(decision.id, self.add_graph(g), "SHOWN_IN")
        later_ids = await self.records.later_decisions(decision.id, graph_ids)
        for later in await self.decisions(later_ids):
            self.lineage.add(later)
            if decision.id in later.details["supersedes"]:
                self.lineage.link(later.id, decision.id, "SUPERSEDES")
            for graph_id in later.details["context_graph_ids"]:
                if graph_id in graph_ids:
                    self.lineage.link(f"context_graph:{graph_id}", later.id, "INFORMED")
            await self.downstream(later, depth - 1)


DECISION_FIX = (
    "lineage starts from a decision: use the decision_id record_decision returned "
    "(or decision:ID; `kg audit trail` lists them)"
)


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
    lineage = Lineage(node_id, direction, depth)
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        tracer = _Tracer(snap.records, governed, lineage)
        found = await tracer.decisions([node_id])
        if node_id in governed.withheld:
            raise PolicyDeniedError(f"access to {clip(node_id)} is denied by policy")
        if not found:
            # Named some other way (a path, an entity)? Say what it names; else the one
            # "not found" of every tool (kg.read.names).
            try:
                other = (await governed.resolve_known([decision_id]))[0]
            except UnknownNodeError:
                other = node_id
            if other == node_id:
                raise UnknownNodeError([node_id], "decision", DECISION_FIX) from None
            raise ValidationError(
                f"{clip(decision_id)} names {clip(other)}, not a decision: {DECISION_FIX}"
            )
        lineage.add(found[0])
        if direction in ("upstream", "both"):
            await tracer.upstream(found[0], depth)
        if direction in ("downstream", "both"):
            await tracer.downstream(found[0], depth)
        await tracer.hide_withheld_references()
    lineage.excluded_by_policy = governed.excluded
    return lineage
