"""``kg audit trail``: the events about a decision, a session, an actor or a time window, in log
order, each with who (actor), what (a one-line summary), when (recorded_at, position) and why
(the rationale, the request, the reason) and where it came from (metadata ``source``).

Selection runs in SQL within the runtime's scope (row-level security on the application role),
and rows stream from a server-side cursor, so a long trail never sits in memory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from kg.config import Scope
from kg.db.tenancy import set_tenant
from kg.errors import KgError, NotFoundError, ValidationError
from kg.events.context import ContextGraphBuilt, ContextGraphUsed
from kg.events.decision import DecisionRecorded
from kg.events.directives import DirectivesServed
from kg.events.envelope import RecordedEvent
from kg.events.knowledge import (
    EdgeAsserted,
    EdgeRetracted,
    EdgesAsserted,
    NodeAsserted,
    NodeRetired,
)
from kg.events.policy import ActionRefused, PolicyChanged, PolicyDefined, PolicyRetired
from kg.events.store import SELECT_EVENT, record_from_row

COLUMNS = (
    "position",
    "recorded_at",
    "actor",
    "session_id",
    "event_type",
    "subject",
    "what",
    "why",
    "source",
    "stream_id",
    "event_id",
    "hash",
)


@dataclass(frozen=True)
class TrailFilter:
    decision: str | None = None
    session: str | None = None
    actor: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    #: event types to keep (``DecisionRecorded``, ...); empty: every type
    event_types: tuple[str, ...] = ()

    @property
    def everything(self) -> bool:
        """No filter: the whole trail of the scope."""
        return not any(
            (self.decision, self.session, self.actor, self.since, self.until, self.event_types)
        )

    def check(self) -> None:
        if self.since and self.until and self.since > self.until:
            raise ValidationError("--since is after --until: nothing can match")
        import kg.events.memory  # noqa: F401  (declares events kg.events does not re-export)
        from kg.events.base import registered_event_types

        known = registered_event_types()
        unknown = sorted(set(self.event_types) - set(known))
        if unknown:
            raise ValidationError(
                f"--type {', '.join(unknown)}: no such event type; use one of {', '.join(known)}"
            )


@dataclass(frozen=True)
class TrailEntry:
    position: int
    recorded_at: str
    actor: str
    session_id: str | None
    event_type: str
    subject: str
    what: str
    why: str
    source: str | None
    stream_id: str
    event_id: str
    hash: str
    payload: dict[str, Any]
    metadata: dict[str, Any]

    def row(self) -> tuple[Any, ...]:
        return tuple(getattr(self, c) for c in COLUMNS)

    def to_dict(self) -> dict[str, Any]:
        data = dict(zip(COLUMNS, self.row(), strict=True))
        data["payload"], data["metadata"] = self.payload, self.metadata
        return data


def _short(text: Any, limit: int = 160) -> str:
    flat = " ".join(str(text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def describe(e: RecordedEvent) -> tuple[str, str, str]:
    """``(subject, what, why)`` for one event, from the decoded (upcast) event."""
    try:
        event = e.event
    except KgError:  # a type this kg does not know (written by a newer one): say only that
        return e.stream_id, e.event_type, ""
    if isinstance(event, DecisionRecorded):
        what = f"decision recorded ({event.decision_type}): {_short(event.text)}"
        why = _short(event.rationale, 500)
        if event.context_graph_ids:
            why = f"{why} [informed by {', '.join(event.context_graph_ids)}]".strip()
        return event.node_id, what, why
    if isinstance(event, NodeAsserted):
        return event.node_id, f"{event.node_type} asserted: {_short(event.name)}", ""
    if isinstance(event, NodeRetired):
        return event.node_id, "node retired", _short(event.reason)
    if isinstance(event, EdgeAsserted | EdgeRetracted):
        verb = "asserted" if isinstance(event, EdgeAsserted) else "retracted"
        edge = f"{event.from_node} -{event.edge_type}-> {event.to_node}"
        return event.from_node, f"edge {verb}: {edge}", ""
    if isinstance(event, EdgesAsserted):
        shown = [f"{e.from_node} -{e.edge_type}-> {e.to_node}" for e in event.edges[:3]]
        more = f" and {len(event.edges) - 3} more" if len(event.edges) > 3 else ""
        what = f"{len(event.edges)} edges asserted: {'; '.join(shown)}{more}"
        return event.edges[0].from_node, what, ""
    if isinstance(event, ContextGraphBuilt):
        asked = ", ".join(
            f"{k}={_short(v, 80)}"
            for k, v in event.request.items()
            if k in ("task", "anchors", "mode", "policies") and v
        )
        what = (
            f"context graph built ({event.mode}, {len(event.node_ids)} nodes, "
            f"{event.excluded_count} excluded by policy) as of position {event.as_of_position}"
        )
        return f"context_graph:{event.context_graph_id}", what, f"request: {asked}"
    if isinstance(event, ContextGraphUsed):
        what = f"context graph used by tool call {event.tool_call_id} ({event.usage_type})"
        why = f"nodes used: {', '.join(event.node_ids)}" if event.node_ids else ""
        return f"context_graph:{event.context_graph_id}", what, _short(why, 500)
    if isinstance(event, DirectivesServed):
        task = _short(str(event.request.get("task") or ""), 200)
        what = (
            f"directives served ({len(event.directive_ids)} of {event.considered}, "
            f"{event.cut_by_budget} cut by the budget, {event.excluded_count} excluded by "
            f"policy; layer {event.detected.get('layer')}) as of position {event.as_of_position}"
        )
        why = f"task: {task}; directives: {', '.join(event.directive_ids)}"
        return f"directives:{event.served_id}", what, _short(why, 1000)
    if isinstance(event, PolicyDefined):
        verb = "changed" if isinstance(event, PolicyChanged) else "defined"
        what = f"policy {verb} ({event.rule.effect}): {_short(event.name)}"
        return event.policy_id, what, _short(event.description or event.origin)
    if isinstance(event, ActionRefused):
        what = f"action refused: {event.actor} may not {event.action}"
        return event.actor, what, f"by {', '.join(event.policy_ids)}"
    if isinstance(event, PolicyRetired):
        return event.policy_id, "policy retired", _short(event.reason)
    return e.stream_id, e.event_type, ""


def entry(e: RecordedEvent) -> TrailEntry:
    subject, what, why = describe(e)
    meta = e.metadata  # exported as stored, beside the payload
    return TrailEntry(
        e.position,
        e.recorded_at.isoformat(),
        e.actor,
        meta.get("session_id"),
        e.event_type,
        subject,
        what,
        why,
        meta.get("source"),
        e.stream_id,
        e.event_id,
        e.hash,
        e.domain_payload,  # erasable fields put back, or "[erased]"
        meta,
    )


_NODE_REFS = "payload->>'node_id' = {n} OR payload->>'from_node' = {n} OR payload->>'to_node' = {n}"


async def _decision_graphs(conn: asyncpg.Connection, scope: Scope, decision_id: str) -> list[str]:
    rows = await conn.fetch(
        "SELECT payload->'context_graph_ids' AS ids FROM kg_events WHERE tenant_id = $1 "
        "AND project_id = $2 AND event_type = 'DecisionRecorded' "
        "AND payload->>'decision_id' = $3",
        scope.tenant_id,
        scope.project_id,
        decision_id,
    )
    return sorted({g for r in rows for g in (r["ids"] or [])})


async def _where(
    conn: asyncpg.Connection, scope: Scope, f: TrailFilter
) -> tuple[list[str], list[Any]]:
    args: list[Any] = [scope.tenant_id, scope.project_id]
    where = ["tenant_id = $1", "project_id = $2"]

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if f.decision:
        decision_id = f.decision.removeprefix("decision:")
        graphs = await _decision_graphs(conn, scope, decision_id)
        d, n = arg(decision_id), arg(f"decision:{decision_id}")
        g = arg(graphs)
        where.append(
            f"(payload->>'decision_id' = {d} OR {_NODE_REFS.format(n=n)} "
            f"OR payload->'supersedes' ? {n} OR payload->'references' ? {n} "
            f"OR payload->'node_ids' ? {n} "
            f"OR (event_type IN ('ContextGraphBuilt', 'ContextGraphUsed') "
            f"AND payload->>'context_graph_id' = ANY({g}::text[])) "
            f"OR (event_type = 'DirectivesServed' AND payload->>'served_id' = ANY({g}::text[])))"
        )
    if f.session:
        s, n = arg(f.session), arg(f"session:{f.session}")
        where.append(
            f"(metadata->>'session_id' = {s} OR payload->>'session_id' = {s} "
            f"OR payload->'request'->>'session_id' = {s} OR {_NODE_REFS.format(n=n)})"
        )
    if f.actor:
        where.append(f"metadata->>'actor' = {arg(f.actor)}")
    if f.since:
        where.append(f"recorded_at >= {arg(f.since)}")
    if f.until:
        where.append(f"recorded_at <= {arg(f.until)}")
    if f.event_types:
        where.append(f"event_type = ANY({arg(list(f.event_types))}::text[])")
    return where, args


async def trail(
    pool: asyncpg.Pool, scope: Scope, f: TrailFilter, *, batch: int = 2000
) -> AsyncIterator[TrailEntry]:
    """The matching events of ``scope`` in position order (``pool``: the application pool)."""
    f.check()
    found = False
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
        await set_tenant(conn, scope.tenant_id)
        where, args = await _where(conn, scope, f)
        sql = (
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE {' AND '.join(where)} "
            "ORDER BY tenant_id, position"
        )
        async for row in conn.cursor(sql, *args, prefetch=batch):
            found = True
            yield entry(record_from_row(row))
    if not found and f.decision:
        raise NotFoundError(
            f"no events about decision {f.decision!r} in this project: use a decision id as "
            "record_decision or kg backfill gave it"
        )
