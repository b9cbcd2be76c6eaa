"""``kg import memory FILE.jsonl``: bring a reference memory server's file into the log.

Each line of ``memory.jsonl`` is an entity (``{"type": "entity", "name", "entityType",
"observations"}``) or a relation (``{"type": "relation", "from", "to", "relationType"}``).
Every event an import appends names its line as provenance (``source: memory.jsonl:12``).
An import is idempotent: an entity already in the graph only gains the observations it lacks,
a relation already there is left alone, so a second run of the same file appends nothing (and
a run over a file the server went on writing imports only what is new). Lines it cannot import
(bad JSON, a missing field, a relation to an entity that is nowhere) are reported with their
line and the reason, never dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from kg.errors import ValidationError
from kg.events import EventMetadata, PendingEvent
from kg.events.base import describe_validation_error
from kg.events.memory import (
    MemoryEntityCreated,
    MemoryObservationsAdded,
    MemoryRelationCreated,
)
from kg.memory.model import Entity, EntityState, Relation
from kg.memory.write import Plan, States, existing_relations, write
from kg.runtime import Runtime

#: entities or relations per append (one transaction each)
CHUNK = 500


@dataclass(frozen=True)
class Skipped:
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass
class ImportReport:
    entities_created: int = 0
    observations_added: int = 0
    relations_created: int = 0
    unchanged: int = 0
    events: int = 0
    position: int | None = None
    skipped: list[Skipped] = field(default_factory=list)

    def summary(self) -> str:
        at = f" (last at position {self.position})" if self.position is not None else ""
        return (
            f"{self.entities_created} entities created, {self.observations_added} observations "
            f"added, {self.relations_created} relations created, {self.unchanged} lines already "
            f"in the graph, {len(self.skipped)} skipped; {self.events} events appended{at}"
        )


@dataclass(frozen=True)
class _Line:
    number: int
    item: Entity | Relation


def read_lines(path: Path, report: ImportReport) -> list[_Line]:
    """The file's entities and relations; unreadable lines go to ``report.skipped``."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValidationError(
            f"cannot read {path}: {exc}; check the path and that it is UTF-8"
        ) from None
    lines: list[_Line] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}:{number}"
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            report.skipped.append(Skipped(where, f"not JSON ({exc.msg})"))
            continue
        kind = data.get("type") if isinstance(data, dict) else None
        fields = {k: v for k, v in data.items() if k != "type"} if isinstance(data, dict) else {}
        model: type[Entity] | type[Relation] | None = (
            Entity if kind == "entity" else Relation if kind == "relation" else None
        )
        if model is None:
            report.skipped.append(Skipped(where, "neither an entity nor a relation ('type')"))
            continue
        try:
            lines.append(_Line(number, model.model_validate(fields)))
        except pydantic.ValidationError as exc:
            report.skipped.append(Skipped(where, describe_validation_error(exc, str(kind))))
    return lines


def _chunks(items: Sequence[_Line]) -> list[Sequence[_Line]]:
    return [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]


async def import_memory(
    rt: Runtime,
    path: Path,
    *,
    actor: str,
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import ``path`` (see the module docstring); ``progress(done, total)`` after each chunk."""
    report = ImportReport()
    lines = read_lines(path, report)
    entities = [line for line in lines if isinstance(line.item, Entity)]
    relations = [line for line in lines if isinstance(line.item, Relation)]
    total, done = len(lines), 0

    def meta(line: _Line) -> EventMetadata:
        return EventMetadata(actor=actor, source=f"{path.name}:{line.number}")

    for chunk in _chunks(entities):

        def decide(states: States, chunk: Sequence[_Line] = chunk) -> Plan[dict[str, int]]:
            plan: Plan[dict[str, int]] = Plan(
                {"created": 0, "added": 0, "unchanged": 0, "hidden": 0}
            )
            current: dict[str, EntityState | None] = dict(states)
            for line in chunk:
                e = line.item
                assert isinstance(e, Entity)
                if e.name in states.hidden:
                    plan.value["hidden"] += 1
                    continue
                state = current.get(e.name)
                wanted = tuple(dict.fromkeys(e.observations))
                if state is None:
                    event: Any = MemoryEntityCreated(
                        name=e.name, entity_type=e.entity_type, observations=wanted
                    )
                    current[e.name] = EntityState(e.name, e.entity_type, wanted)
                    plan.value["created"] += 1
                else:
                    added = tuple(o for o in wanted if o not in state.observations)
                    if not added:
                        plan.value["unchanged"] += 1
                        continue
                    after = state.observations + added
                    current[e.name] = EntityState(state.name, state.entity_type, after)
                    event = MemoryObservationsAdded(
                        name=state.name, entity_type=state.entity_type, added=added,
                        observations=after,
                    )  # fmt: skip
                    plan.value["added"] += len(added)
                plan.add(e.name, PendingEvent(event, meta(line)))
            return plan

        names = [line.item.name for line in chunk if isinstance(line.item, Entity)]
        written = await write(rt, names, decide, EventMetadata(actor=actor))
        counts = written.value
        hidden = counts["hidden"]
        report.entities_created += counts["created"]
        report.observations_added += counts["added"]
        report.unchanged += counts["unchanged"]
        _landed(report, written.position, written.events)
        if hidden:
            report.skipped.append(
                Skipped(path.name, f"{hidden} entities a policy withholds from {actor}")
            )
        done += len(chunk)
        if progress is not None:
            progress(done, total)

    for chunk in _chunks(relations):
        items = [line.item for line in chunk if isinstance(line.item, Relation)]
        present = await existing_relations(rt, items)

        def decide_relations(
            states: States, chunk: Sequence[_Line] = chunk, present: set[Any] = present
        ) -> Plan[list[Skipped]]:
            plan: Plan[list[Skipped]] = Plan([])
            seen = set(present)
            for line in chunk:
                r = line.item
                assert isinstance(r, Relation)
                if r.key in seen:
                    continue
                missing = [n for n in (r.from_, r.to) if states.get(n) is None]
                if missing:
                    plan.value.append(
                        Skipped(
                            f"{path.name}:{line.number}",
                            f"relation to {', '.join(repr(m) for m in missing)}: no such entity "
                            "in the file or the graph (or a policy withholds it)",
                        )
                    )
                    continue
                seen.add(r.key)
                event = MemoryRelationCreated(
                    from_name=r.from_, to_name=r.to, relation_type=r.relation_type
                )
                plan.add(r.from_, PendingEvent(event, meta(line)))
            return plan

        names = [n for r in items for n in (r.from_, r.to)]
        written_relations = await write(rt, names, decide_relations, EventMetadata(actor=actor))
        report.skipped += written_relations.value
        report.relations_created += written_relations.events
        report.unchanged += len(chunk) - written_relations.events - len(written_relations.value)
        _landed(report, written_relations.position, written_relations.events)
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    return report


def _landed(report: ImportReport, position: int | None, events: int) -> None:
    report.events += events
    if position is not None:
        report.position = max(report.position or 0, position)
