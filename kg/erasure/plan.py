"""What an erasure would touch: the ``--dry-run`` of ``kg erase`` and the first step of it.

Three selections, all within one tenant's project:

* ``node``: every assertion of one node (``section:docs/a.md#setup``, ``decision:42``);
* ``source``: every node event ingested from one file (the ``source`` of its metadata);
* ``pattern``: every event whose content holds a literal string (a leaked key that landed in
  several files). The pattern is never logged or printed: it is the secret.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import asyncpg

from kg.breadcrumbs import breadcrumb
from kg.config import Scope
from kg.embeddings.base import content_hash
from kg.embeddings.cache import embedding_text, passage_texts
from kg.errors import ValidationError
from kg.events.content import body_digest, content_ref
from kg.events.envelope import RecordedEvent
from kg.events.knowledge import NodeAsserted
from kg.events.store import SELECT_EVENT, record_from_row
from kg.projections.normalise import graph_changes
from kg.read.as_of import check_schema_name, list_replays

Selector = Literal["node", "source", "pattern"]
ERASABLE_TYPES = ("NodeAsserted", "DecisionRecorded")
LIVE = "public"


@dataclass(frozen=True)
class Selection:
    selector: Selector
    value: str

    def __post_init__(self) -> None:
        if not self.value.strip():
            raise ValidationError(f"kg erase --{self.selector} needs a non-empty value")
        if self.selector == "pattern" and len(self.value) < 8:
            raise ValidationError(
                "kg erase --pattern needs at least 8 characters: a shorter string matches "
                "ordinary text (erase by --node or --source instead)"
            )

    @property
    def target(self) -> str:
        """What the receipt and the log may say was selected (never a pattern)."""
        return "" if self.selector == "pattern" else self.value

    def describe(self) -> str:
        if self.selector == "pattern":
            return f"pattern of {len(self.value)} characters (not shown)"
        return f"{self.selector} {self.value}"


@dataclass(frozen=True)
class ProjectedRow:
    """A ``kg_nodes`` row (live, or in a kept replay) derived from an event being erased."""

    schema: str
    node_id: str
    last_position: int
    passages: int


@dataclass
class ErasurePlan:
    scope: Scope
    selection: Selection
    #: events whose erasable content is removed (content present, selected)
    events: list[RecordedEvent] = field(default_factory=list)
    #: selected events whose content was erased before
    already_erased: list[int] = field(default_factory=list)
    #: selected events whose content is inside the hashed payload (written before migration
    #: 0014, or the pattern is in a field that is not erasable: a name, an id, properties)
    not_erasable: list[int] = field(default_factory=list)
    #: selected events whose stored content does not match the digest their hash covers (edited
    #: behind kg's back): erasing it would destroy the evidence, so erasure refuses
    tampered: list[int] = field(default_factory=list)
    node_ids: list[str] = field(default_factory=list)
    rows: list[ProjectedRow] = field(default_factory=list)
    #: rows that keep the content because the log does (from ``not_erasable`` events)
    rows_kept: list[ProjectedRow] = field(default_factory=list)
    cache_hashes: list[str] = field(default_factory=list)
    context_graphs: list[str] = field(default_factory=list)
    replays: list[str] = field(default_factory=list)

    @property
    def positions(self) -> list[int]:
        return [e.position for e in self.events]

    def lines(self) -> list[str]:
        """The dry-run listing: every event, row, cache entry and replay touched."""
        out = [
            f"erase {self.selection.describe()} in {self.scope.tenant_id}/{self.scope.project_id}:"
        ]
        for e in self.events:
            fields = ", ".join((content_ref(e.payload) or {}).get("fields", ()))
            out.append(
                f"  event {e.position} {e.event_type} {e.stream_id}: erase {fields} "
                f"(digest {e.content_digest})"
            )
        for row in self.rows:
            out.append(
                f"  row {row.schema}.kg_nodes {row.node_id} (+{row.passages} passages): re-derive"
            )
        for h in self.cache_hashes:
            out.append(f"  embedding cache entry {h[:16]}: drop (a vector of erased text)")
        for schema in self.replays:
            out.append(f"  kept replay {schema}: its rows re-derived, its log view erased")
        for graph in self.context_graphs:
            out.append(f"  context graph {graph}: can no longer be re-derived in full")
        for position in self.already_erased:
            out.append(f"  event {position}: already erased")
        for position in self.not_erasable:
            out.append(
                f"  event {position}: NOT erasable (the content is inside its hashed payload)"
            )
        for row in self.rows_kept:
            out.append(f"  row {row.schema}.kg_nodes {row.node_id}: kept (the log holds it)")
        for position in self.tampered:
            out.append(
                f"  event {position}: its content does NOT match the digest its hash covers "
                "(edited after it was written): the erasure will be refused"
            )
        return out


def _json_escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


_WHERE = {
    "node": "(payload->>'node_id' = $3 OR (event_type = 'DecisionRecorded' "
    "AND 'decision:' || (payload->>'decision_id') = $3))",
    "source": "(metadata->>'source' = $3 OR left(metadata->>'source', length($3) + 1) = $3 || '@')",
    # $3 is the pattern as JSON writes it: payloads and bodies are JSON text.
    "pattern": "(strpos(payload::text, $3) > 0 OR EXISTS (SELECT 1 FROM kg_event_content c "
    "WHERE c.tenant_id = kg_events.tenant_id AND c.position = kg_events.position "
    "AND strpos(c.body, $3) > 0))",
}


async def _select_events(
    conn: asyncpg.Connection, scope: Scope, selection: Selection
) -> list[RecordedEvent]:
    args: list[object] = [scope.tenant_id, scope.project_id, selection.value]
    types = ""
    if selection.selector == "pattern":
        args[2] = _json_escaped(selection.value)
    else:
        types = f" AND event_type IN {ERASABLE_TYPES!r}"
    rows = await conn.fetch(
        f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND project_id = $2"
        f"{types} AND {_WHERE[selection.selector]} ORDER BY tenant_id, position",
        *args,
    )
    return [record_from_row(r) for r in rows]


def _holds(text_fields: Iterable[object], pattern: str) -> bool:
    return any(isinstance(v, str) and pattern in v for v in text_fields)


def classify(plan: ErasurePlan, events: Sequence[RecordedEvent]) -> None:
    """Sort the selected events into erasable, already erased and not erasable."""
    pattern = plan.selection.value if plan.selection.selector == "pattern" else None
    for e in events:
        ref = content_ref(e.payload)
        if ref is not None and e.content_body is not None:
            if pattern is None or _holds(e.content_body.get("fields", {}).values(), pattern):
                plan.events.append(e)
                if body_digest(e.content or "") != e.content_digest:
                    plan.tampered.append(e.position)
        elif ref is not None and pattern is None:
            plan.already_erased.append(e.position)
        if pattern is not None:
            if pattern in json.dumps(e.payload, ensure_ascii=False) or _json_escaped(
                pattern
            ) in json.dumps(e.payload, ensure_ascii=False):
                plan.not_erasable.append(e.position)
        elif ref is None and any(e.payload.get(f) for f in e.event.erasable_fields):
            plan.not_erasable.append(e.position)


def node_ids_of(events: Iterable[RecordedEvent]) -> list[str]:
    ids: dict[str, None] = {}
    for g in graph_changes(events):
        if isinstance(g.change, NodeAsserted):
            ids[g.change.node_id] = None
    return list(ids)


def embedded_hashes(events: Iterable[RecordedEvent]) -> list[str]:
    """Content hashes of every text embedded for these events' nodes (the node's own text and
    its passages'): the embedding-cache keys derived from the content being erased."""
    hashes: dict[str, None] = {}
    for g in graph_changes(events):
        node = g.change
        if isinstance(node, NodeAsserted):
            place = breadcrumb(node.node_id, node.name, node.properties or {})
            hashes[content_hash(embedding_text(node.name, node.content, place))] = None
            for passage in passage_texts(node.name, node.content, place):
                hashes[content_hash(passage)] = None
    return list(hashes)


async def _rows(
    conn: asyncpg.Connection, schema: str, scope: Scope, node_ids: list[str], positions: set[int]
) -> list[ProjectedRow]:
    q = f'"{check_schema_name(schema)}".' if schema != LIVE else "public."
    rows = await conn.fetch(
        f"SELECT n.node_id, n.last_position, (SELECT count(*) FROM {q}kg_passages p "
        "WHERE p.tenant_id = n.tenant_id AND p.project_id = n.project_id "
        f"AND p.node_id = n.node_id) AS passages FROM {q}kg_nodes n "
        "WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = ANY($3) ORDER BY n.node_id",
        scope.tenant_id,
        scope.project_id,
        node_ids,
    )
    return [
        ProjectedRow(schema, r["node_id"], int(r["last_position"]), int(r["passages"]))
        for r in rows
        if int(r["last_position"]) in positions
    ]


async def plan_erasure(
    system_pool: asyncpg.Pool, scope: Scope, selection: Selection
) -> ErasurePlan:
    """What erasing ``selection`` touches (nothing is changed)."""
    plan = ErasurePlan(scope, selection)
    async with system_pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
        selected = await _select_events(conn, scope, selection)
        classify(plan, selected)
        kept = [e for e in selected if e.position in set(plan.not_erasable)]
        plan.node_ids = node_ids_of(plan.events)
        kept_ids = node_ids_of(kept)
        schemas = [LIVE] + [
            r.schema for r in await list_replays(system_pool) if r.tenant_id == scope.tenant_id
        ]
        erasing, keeping = set(plan.positions), set(plan.not_erasable)
        for schema in schemas:
            rows = await _rows(conn, schema, scope, plan.node_ids, erasing)
            plan.rows += rows
            plan.rows_kept += await _rows(conn, schema, scope, kept_ids, keeping)
            if rows and schema != LIVE:
                plan.replays.append(schema)
        hashes = embedded_hashes(plan.events)
        cached = await conn.fetch(
            "SELECT DISTINCT content_hash FROM embedding_cache WHERE content_hash = ANY($1)",
            hashes,
        )
        plan.cache_hashes = sorted(r["content_hash"] for r in cached)
        graphs = await conn.fetch(
            "SELECT context_graph_id FROM context_graphs WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_ids && $3::text[] AND as_of_position >= $4 ORDER BY context_graph_id",
            scope.tenant_id,
            scope.project_id,
            plan.node_ids,
            min(plan.positions, default=0),
        )
        plan.context_graphs = [r["context_graph_id"] for r in graphs]
    return plan
