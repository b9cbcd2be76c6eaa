"""Writing memory: the reference server's six write tools as appends to the log.

Every write reads the entities' streams (their versions and states), decides the events, and
appends them in one transaction expecting those versions. If another client changed one of the
entities meanwhile the append is refused whole, and the write is decided again on the new
state: no write is lost and none applies twice (the reference server reads its file, changes
it in memory and writes it back, so the last of two concurrent writers wins). A relation is
appended to the stream of the entity it starts from, so it cannot slip in after that entity's
deletion. Each result says where its events landed in the log (``position``: the last one).

Entities a policy hides from the caller are treated as absent: they are neither changed nor
reported (see :mod:`kg.memory.read` for the read side).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kg.errors import ConcurrencyConflictError, NotFoundError
from kg.events import EventMetadata, PendingEvent
from kg.events.base import DomainEvent
from kg.events.memory import (
    MemoryEntityCreated,
    MemoryEntityDeleted,
    MemoryObservationsAdded,
    MemoryObservationsDeleted,
    MemoryRelationCreated,
    MemoryRelationDeleted,
    edge_type,
    node_id,
)
from kg.events.store import StreamEvent
from kg.memory.model import (
    ENTITY_EVENT_TYPES,
    AddedObservations,
    Entity,
    EntityState,
    ObservationsToAdd,
    ObservationsToDelete,
    Relation,
    state_of,
    stream_of,
)
from kg.runtime import Runtime
from kg.validation import clip_many

#: appends tried before a write gives up under contention (each retry re-reads the state)
MAX_ATTEMPTS = 50
T = TypeVar("T")


@dataclass(frozen=True)
class Written(Generic[T]):
    """What a write did (``value``, in the reference server's shape) and where it landed:
    ``position`` is the log position of its last event (None when it had nothing to write),
    ``events`` how many it appended."""

    value: T
    position: int | None = None
    events: int = 0


@dataclass
class Plan(Generic[T]):
    value: T
    appends: list[StreamEvent] = field(default_factory=list)

    def add(self, name: str, event: DomainEvent | PendingEvent) -> None:
        self.appends.append(StreamEvent(stream_of(name), event))


class States(dict[str, EntityState | None]):
    """The entities' states (None: absent, or hidden from the caller by a policy)."""

    def __init__(self, hidden: set[str]) -> None:
        super().__init__()
        #: names whose entity exists but a policy withholds: absent to the caller, yet taken
        self.hidden = hidden


async def hidden_names(rt: Runtime, names: Sequence[str]) -> set[str]:
    """Those of ``names`` whose entity exists but a policy withholds from this caller."""
    ids = {node_id(n): n for n in names}
    async with rt.reader().snapshot() as snap:
        existing = await snap.records.existing(list(ids))
        if not existing:
            return set()
        admitted = {a.node_id for a in await (await snap.governed()).nodes(list(existing))}
    return {ids[i] for i in existing - admitted}


async def write(
    rt: Runtime,
    names: Sequence[str],
    decide: Callable[[States], Plan[T]],
    metadata: EventMetadata,
) -> Written[T]:
    """Read the streams of ``names``, let ``decide`` plan the events from their states, and
    append them expecting those streams unchanged; on a conflict, read and decide again."""
    wanted = list(dict.fromkeys(names))
    hidden = await hidden_names(rt, wanted)
    conflict: ConcurrencyConflictError | None = None
    for attempt in range(MAX_ATTEMPTS):
        heads = await rt.store.stream_heads(
            rt.scope, [stream_of(n) for n in wanted], ENTITY_EVENT_TYPES
        )
        states = States(hidden)
        for name in wanted:
            head = heads.get(stream_of(name))
            states[name] = None if name in hidden or head is None else state_of(head.event)
        plan = decide(states)
        if not plan.appends:
            return Written(plan.value)
        touched = {a.stream_id for a in plan.appends}
        expected = {s: heads[s].version if s in heads else 0 for s in touched}
        try:
            results = await rt.store.append_many(
                rt.scope, plan.appends, expected_versions=expected, metadata=metadata
            )
        except ConcurrencyConflictError as error:
            conflict = error
            # Another client changed one of these entities: decide again on what it wrote.
            await asyncio.sleep(random.uniform(0, 0.002 * (attempt + 1)))
            continue
        position = max(r.last_position for r in results)
        return Written(plan.value, position, len(plan.appends))
    assert conflict is not None  # other clients kept changing these entities: retry the call
    raise conflict


def _unknown(states: States, names: Sequence[str]) -> None:
    missing = [n for n in dict.fromkeys(names) if states.get(n) is None]
    if missing:
        raise NotFoundError(
            f"entity {clip_many(missing)} not found: create it with create_entities first "
            "(search_nodes finds existing names)"
        )


async def create_entities(
    rt: Runtime, entities: Sequence[Entity], metadata: EventMetadata
) -> Written[list[Entity]]:
    """Create the entities whose names are new; the result lists those created (as the
    reference does, an existing name is left as it is; within one call the first wins)."""

    def decide(states: States) -> Plan[list[Entity]]:
        plan: Plan[list[Entity]] = Plan([])
        seen: set[str] = set()
        for e in entities:
            if states.get(e.name) is not None or e.name in seen or e.name in states.hidden:
                continue
            seen.add(e.name)
            observations = tuple(dict.fromkeys(e.observations))
            plan.add(e.name, MemoryEntityCreated(
                name=e.name, entity_type=e.entity_type, observations=observations
            ))  # fmt: skip
            plan.value.append(e.model_copy(update={"observations": list(observations)}))
        return plan

    return await write(rt, [e.name for e in entities], decide, metadata)


async def add_observations(
    rt: Runtime, additions: Sequence[ObservationsToAdd], metadata: EventMetadata
) -> Written[list[AddedObservations]]:
    """Add observations an entity does not have yet; an unknown entity fails the whole call
    (nothing is written), as in the reference."""

    def decide(states: States) -> Plan[list[AddedObservations]]:
        _unknown(states, [a.entity_name for a in additions])
        plan: Plan[list[AddedObservations]] = Plan([])
        current = {n: s for n, s in states.items() if s is not None}
        for a in additions:
            state = current[a.entity_name]
            added = tuple(o for o in dict.fromkeys(a.contents) if o not in state.observations)
            plan.value.append(
                AddedObservations(entity_name=a.entity_name, added_observations=list(added))
            )
            if not added:
                continue
            after = EntityState(state.name, state.entity_type, state.observations + added)
            current[a.entity_name] = after
            plan.add(a.entity_name, MemoryObservationsAdded(
                name=state.name, entity_type=state.entity_type, added=added,
                observations=after.observations,
            ))  # fmt: skip
        return plan

    return await write(rt, [a.entity_name for a in additions], decide, metadata)


async def delete_entities(
    rt: Runtime, names: Sequence[str], metadata: EventMetadata
) -> Written[list[str]]:
    """Retire the entities (their relations go with them); unknown names are ignored."""

    def decide(states: States) -> Plan[list[str]]:
        plan: Plan[list[str]] = Plan([])
        for name in dict.fromkeys(names):
            if states.get(name) is not None:
                plan.add(name, MemoryEntityDeleted(name=name))
                plan.value.append(name)
        return plan

    return await write(rt, names, decide, metadata)


async def delete_observations(
    rt: Runtime, deletions: Sequence[ObservationsToDelete], metadata: EventMetadata
) -> Written[int]:
    """Remove observations; unknown entities and observations are ignored. The value is the
    number of observations removed."""

    def decide(states: States) -> Plan[int]:
        plan = Plan(0)
        current: dict[str, EntityState | None] = dict(states)
        for d in deletions:
            state = current.get(d.entity_name)
            if state is None:
                continue
            gone = tuple(o for o in dict.fromkeys(d.observations) if o in state.observations)
            if not gone:
                continue
            kept = tuple(o for o in state.observations if o not in gone)
            current[d.entity_name] = EntityState(state.name, state.entity_type, kept)
            plan.value += len(gone)
            plan.add(d.entity_name, MemoryObservationsDeleted(
                name=state.name, entity_type=state.entity_type, deleted=gone, observations=kept,
            ))  # fmt: skip
        return plan

    return await write(rt, [d.entity_name for d in deletions], decide, metadata)


async def existing_relations(
    rt: Runtime, relations: Sequence[Relation]
) -> set[tuple[str, str, str]]:
    async with rt.reader().snapshot() as snap:
        found = await snap.memory.relation_keys(
            [(node_id(r.from_), edge_type(r.relation_type), node_id(r.to)) for r in relations]
        )
    by_edge = {
        (node_id(r.from_), edge_type(r.relation_type), node_id(r.to)): r.key for r in relations
    }
    return {by_edge[k] for k in found if k in by_edge}


async def create_relations(
    rt: Runtime, relations: Sequence[Relation], metadata: EventMetadata
) -> Written[list[Relation]]:
    """Create the relations that do not exist yet; the result lists those created. Both ends
    must be existing entities: a relation to nothing would be invisible (the reference keeps
    it, and shows it, dangling)."""
    existing = await existing_relations(rt, relations)

    def decide(states: States) -> Plan[list[Relation]]:
        _unknown(states, [n for r in relations for n in (r.from_, r.to)])
        plan: Plan[list[Relation]] = Plan([])
        seen = set(existing)
        for r in relations:
            if r.key in seen:
                continue
            seen.add(r.key)
            plan.add(r.from_, MemoryRelationCreated(
                from_name=r.from_, to_name=r.to, relation_type=r.relation_type
            ))  # fmt: skip
            plan.value.append(r)
        return plan

    return await write(rt, [n for r in relations for n in (r.from_, r.to)], decide, metadata)


async def delete_relations(
    rt: Runtime, relations: Sequence[Relation], metadata: EventMetadata
) -> Written[list[Relation]]:
    """Remove the relations that exist; the result lists those removed."""
    existing = await existing_relations(rt, relations)

    def decide(states: States) -> Plan[list[Relation]]:
        plan: Plan[list[Relation]] = Plan([])
        seen: set[tuple[str, str, str]] = set()
        for r in relations:
            if r.key not in existing or r.key in seen or states.get(r.from_) is None:
                continue
            seen.add(r.key)
            plan.add(r.from_, MemoryRelationDeleted(
                from_name=r.from_, to_name=r.to, relation_type=r.relation_type
            ))  # fmt: skip
            plan.value.append(r)
        return plan

    return await write(rt, [r.from_ for r in relations], decide, metadata)
