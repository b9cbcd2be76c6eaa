"""``record_decision``: a decision node, linked to what informed it (lineage starts here)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kg.errors import ConcurrencyConflictError, NotFoundError, ValidationError
from kg.events import DecisionRecorded, DirectivesServed, EventMetadata, build_event
from kg.read.records import Records
from kg.runtime import Runtime
from kg.validation import MAX_ID_CHARS, check_text, check_texts, clip, clip_many

MAX_INFORMED_BY = 1000
SERVED_PREFIX = "ds_"  # kg.rules.service names served directive sets so


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


async def _served_directives(rt: Runtime, served_ids: Sequence[str]) -> list[str]:
    """The directives each ``query_directives`` result (``ds_...``) served, from its event."""
    nodes: list[str] = []
    for served_id in served_ids:
        events = await rt.store.read_stream(rt.scope, f"directives:{served_id}")
        served = [e.event for e in events if e.event_type == "DirectivesServed"]
        if not served:
            raise NotFoundError(
                f"served directives {clip_many([served_id])} not found in this project: pass "
                "the served_id returned by query_directives"
            )
        nodes += [d for e in served if isinstance(e, DirectivesServed) for d in e.directive_ids]
    return nodes


async def _informing_nodes(
    records: Records, graph_ids: Sequence[str], rules: Sequence[str] = ()
) -> list[str]:
    """Per informing graph: the nodes a tool call reported using, else every node it showed;
    ``rules`` (the directives of served ``ds_...`` ids) come first."""
    if not graph_ids:
        return list(rules)[:MAX_INFORMED_BY]
    shown = await records.context_graphs(graph_ids)
    used_by = await records.used_nodes(graph_ids)
    missing = sorted(set(graph_ids) - {g.context_graph_id for g in shown})
    if missing:
        raise NotFoundError(
            f"context graph(s) {clip_many(missing)} not found in this project: pass ids returned "
            "by build_context_graph"
        )
    nodes: dict[str, None] = dict.fromkeys(rules)
    for g in sorted(shown, key=lambda g: graph_ids.index(g.context_graph_id)):
        for node_id in g.node_ids:
            if g.context_graph_id not in used_by or node_id in used_by[g.context_graph_id]:
                nodes[node_id] = None
    return list(nodes)[:MAX_INFORMED_BY]


async def _check_nodes_exist(records: Records, node_ids: Sequence[str], what: str) -> None:
    if not node_ids:
        return
    missing = sorted(set(node_ids) - await records.existing(node_ids))
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
    if references:  # paths, requirement ids and entity names, as every tool takes them
        async with rt.reader().snapshot() as snap:
            governed = await snap.governed()
            references = await governed.resolve_known(list(references), "referenced node")
    graph_ids = list(dict.fromkeys(context_graph_ids))
    rules = await _served_directives(rt, [g for g in graph_ids if g.startswith(SERVED_PREFIX)])
    async with rt.reader().records() as records:
        informed_by = await _informing_nodes(
            records, [g for g in graph_ids if not g.startswith(SERVED_PREFIX)], rules
        )
        await _check_nodes_exist(records, list(references), "referenced")
        not_decisions = [s for s in supersedes if not s.startswith("decision:")]
        if not_decisions:
            raise ValidationError(
                "supersedes must name decision nodes ('decision:...'), not "
                f"{clip_many(not_decisions)}"
            )
        await _check_nodes_exist(records, list(supersedes), "superseded")
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
