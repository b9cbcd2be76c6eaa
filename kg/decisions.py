"""``record_decision``: a decision node, linked to what informed it (lineage starts here)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kg.db.tenancy import tenant_transaction
from kg.errors import ConcurrencyConflictError, NotFoundError, ValidationError
from kg.events import DecisionRecorded, EventMetadata, build_event
from kg.runtime import Runtime
from kg.validation import MAX_ID_CHARS, check_text, check_texts, clip, clip_many

MAX_INFORMED_BY = 1000


@dataclass(frozen=True)
class RecordedDecision:
    decision_id: str
    node_id: str
    position: int
    context_graph_ids: tuple[str, ...]
    informed_by: tuple[str, ...]
    duplicate: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


async def _informing_nodes(rt: Runtime, graph_ids: Sequence[str]) -> list[str]:
    """Per informing graph: the nodes a tool call reported using, else every node it showed."""
    if not graph_ids:
        return []
    async with tenant_transaction(rt.app_pool, rt.scope.tenant_id) as conn:
        args = (rt.scope.tenant_id, rt.scope.project_id, list(graph_ids))
        shown = await conn.fetch(
            "SELECT context_graph_id, node_ids FROM context_graphs WHERE tenant_id = $1 "
            "AND project_id = $2 AND context_graph_id = ANY($3)",
            *args,
        )
        used = await conn.fetch(
            "SELECT context_graph_id, node_ids FROM context_graph_usage WHERE tenant_id = $1 "
            "AND project_id = $2 AND context_graph_id = ANY($3) AND cardinality(node_ids) > 0",
            *args,
        )
    missing = sorted(set(graph_ids) - {r["context_graph_id"] for r in shown})
    if missing:
        raise NotFoundError(
            f"context graph(s) {clip_many(missing)} not found in this project: pass ids returned "
            "by build_context_graph"
        )
    used_by: dict[str, set[str]] = {}
    for r in used:
        used_by.setdefault(r["context_graph_id"], set()).update(r["node_ids"])
    nodes: dict[str, None] = {}
    for r in sorted(shown, key=lambda r: graph_ids.index(r["context_graph_id"])):
        for node_id in r["node_ids"]:
            if r["context_graph_id"] not in used_by or node_id in used_by[r["context_graph_id"]]:
                nodes[node_id] = None
    return list(nodes)[:MAX_INFORMED_BY]


async def _check_nodes_exist(rt: Runtime, node_ids: Sequence[str], what: str) -> None:
    if not node_ids:
        return
    async with tenant_transaction(rt.app_pool, rt.scope.tenant_id) as conn:
        found = await conn.fetch(
            "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_id = ANY($3)",
            rt.scope.tenant_id,
            rt.scope.project_id,
            list(node_ids),
        )
    missing = sorted(set(node_ids) - {r["node_id"] for r in found})
    if missing:
        raise NotFoundError(f"{what} node(s) {clip_many(missing)} not found in this project")


async def record_decision(
    rt: Runtime,
    *,
    text: str,
    rationale: str = "",
    decision_type: str = "general",
    confidence: float | None = None,
    context_graph_ids: Sequence[str] = (),
    references: Sequence[str] = (),
    supersedes: Sequence[str] = (),
    decision_id: str | None = None,
    metadata: EventMetadata | None = None,
) -> RecordedDecision:
    """Append ``DecisionRecorded``: a ``decision:{id}`` node with INFORMED_BY edges to the nodes
    of the context graphs that informed it, REFERENCES and SUPERSEDES edges."""
    check_text("text", text)
    check_text("rationale", rationale)
    check_text("decision_type", decision_type, 100)
    for name, ids in (
        ("context_graph_ids", context_graph_ids),
        ("references", references),
        ("supersedes", supersedes),
    ):
        check_texts(name, ids, MAX_ID_CHARS)
    if decision_id is not None:
        check_text("decision_id", decision_id, 200)
    if metadata is not None and metadata.session_id is not None:
        check_text("session_id", metadata.session_id, 200)
    await rt.catch_up()
    graph_ids = list(dict.fromkeys(context_graph_ids))
    informed_by = await _informing_nodes(rt, graph_ids)
    await _check_nodes_exist(rt, list(references), "referenced")
    not_decisions = [s for s in supersedes if not s.startswith("decision:")]
    if not_decisions:
        raise ValidationError(
            f"supersedes must name decision nodes ('decision:...'), not {clip_many(not_decisions)}"
        )
    await _check_nodes_exist(rt, list(supersedes), "superseded")
    decision_id = decision_id or uuid.uuid4().hex[:16]
    event = build_event(
        DecisionRecorded,
        decision_id=decision_id,
        text=text,
        rationale=rationale,
        decision_type=decision_type,
        confidence=confidence,
        context_graph_ids=tuple(graph_ids),
        informed_by=tuple(informed_by),
        references=tuple(references),
        supersedes=tuple(supersedes),
    )
    try:
        result = await rt.store.append(
            rt.scope, event.node_id, [event], expected_version=0, metadata=metadata
        )
    except ConcurrencyConflictError:
        raise ValidationError(
            f"decision {clip(decision_id)} is already recorded: decisions are immutable; record a "
            f"new one with supersedes=['decision:{decision_id}']"
        ) from None
    return RecordedDecision(
        decision_id, event.node_id, result.last_position, tuple(graph_ids), tuple(informed_by)
    )
