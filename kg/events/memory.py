"""Memory events: the reference MCP memory server's entities, observations and relations.

An entity is one stream (``memory:<name>``), so every change to it is appended with the
stream's expected version: two clients adding observations to one entity at once both land
(the loser of the race re-reads and appends again) instead of one overwriting the other, which
is how the reference server loses writes when two clients share its file. Each entity event
carries the entity's whole observation list after the change as well as what changed: the
projection stays a pure function of one event (:mod:`kg.projections.normalise`), and the log
still says what each client did. A deletion is a retirement: the history stays in the log.
"""

from __future__ import annotations

import hashlib
import re
from typing import Annotated

from pydantic import AfterValidator, Field

from kg.events.base import DomainEvent
from kg.validation import ShortStr, TypeStr, ensure_storable

#: the node type, id prefix and label of every memory entity in kg_nodes
NODE_TYPE = "MemoryEntity"
ID_PREFIX = "memory:"
LABEL = "memory"
#: every relation type becomes an edge type with this prefix, so that an agent's relation can
#: never pose as one the product gives a meaning to (GOVERNED_BY, SUPERSEDES, ...)
EDGE_PREFIX = "MEMORY_"
MAX_NAME_CHARS = 400  # + "memory:" within the 500 characters of a stream id
MAX_OBSERVATION_CHARS = 10_000
MAX_OBSERVATIONS = 2_000

EntityName = Annotated[
    str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(ensure_storable)
]
Observation = Annotated[
    str, Field(min_length=1, max_length=MAX_OBSERVATION_CHARS), AfterValidator(ensure_storable)
]
Observations = Annotated[tuple[Observation, ...], Field(max_length=MAX_OBSERVATIONS)]


class MemoryEntityCreated(DomainEvent):
    """An entity was created with its first observations."""

    event_type = "MemoryEntityCreated"

    name: EntityName
    entity_type: TypeStr
    observations: Observations = ()


class MemoryObservationsAdded(DomainEvent):
    """Observations were added to an entity; ``observations`` is its whole list after."""

    event_type = "MemoryObservationsAdded"

    name: EntityName
    entity_type: TypeStr
    added: Observations
    observations: Observations


class MemoryObservationsDeleted(DomainEvent):
    """Observations were removed from an entity; ``observations`` is its whole list after."""

    event_type = "MemoryObservationsDeleted"

    name: EntityName
    entity_type: TypeStr
    deleted: Observations
    observations: Observations


class MemoryEntityDeleted(DomainEvent):
    """An entity was deleted (retired): it and its relations leave the graph, not the log."""

    event_type = "MemoryEntityDeleted"

    name: EntityName


class MemoryRelationCreated(DomainEvent):
    """A relation between two entities, in active voice (``Alice works_at Acme``)."""

    event_type = "MemoryRelationCreated"

    from_name: EntityName
    to_name: EntityName
    relation_type: ShortStr


class MemoryRelationDeleted(DomainEvent):
    """A relation was removed."""

    event_type = "MemoryRelationDeleted"

    from_name: EntityName
    to_name: EntityName
    relation_type: ShortStr


ENTITY_EVENTS = (
    MemoryEntityCreated,
    MemoryObservationsAdded,
    MemoryObservationsDeleted,
    MemoryEntityDeleted,
)
MEMORY_EVENTS = (*ENTITY_EVENTS, MemoryRelationCreated, MemoryRelationDeleted)
MemoryEvent = (
    MemoryEntityCreated
    | MemoryObservationsAdded
    | MemoryObservationsDeleted
    | MemoryEntityDeleted
    | MemoryRelationCreated
    | MemoryRelationDeleted
)
MEMORY_EVENT_TYPES = frozenset(c.event_type for c in MEMORY_EVENTS)


def node_id(name: str) -> str:
    """The node of the entity called ``name`` (names are unique, as in the reference)."""
    return f"{ID_PREFIX}{name}"


def entity_labels(entity_type: str) -> tuple[str, ...]:
    """``memory`` and ``memory:<type>``: a policy can select all memory, or one entity type."""
    return (LABEL, f"{LABEL}:{entity_type.lower()}")


_NOT_WORD = re.compile(r"[^A-Za-z0-9]+")


def edge_type(relation_type: str) -> str:
    """The edge type of a relation type: ``works at`` -> ``MEMORY_WORKS_AT_<hash>``,
    ``works_at`` -> ``MEMORY_WORKS_AT``. A relation type that is not already lower snake case
    gets a short digest of itself, so two types the reference keeps apart (``works at``,
    ``works_at``, ``WORKS_AT``) stay apart here too; the edge keeps the type as written."""
    word = _NOT_WORD.sub("_", relation_type).strip("_").upper()[:40] or "RELATED"
    if word.lower() == relation_type:
        return EDGE_PREFIX + word
    digest = hashlib.sha256(relation_type.encode("utf-8")).hexdigest()[:8].upper()
    return f"{EDGE_PREFIX}{word}_{digest}"
