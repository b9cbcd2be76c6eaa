"""The memory server's shapes, with its field names (``entityType``, ``relationType``), and
the state of one entity as its stream's newest event says it is."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from kg.events.envelope import RecordedEvent
from kg.events.memory import (
    ENTITY_EVENTS,
    ID_PREFIX,
    EntityName,
    MemoryEntityCreated,
    MemoryObservationsAdded,
    MemoryObservationsDeleted,
    Observation,
)
from kg.validation import ShortStr, TypeStr

MAX_ITEMS = 1000  # entities, relations or names in one call


class _Shape(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class Entity(_Shape):
    name: EntityName = Field(description="The name of the entity")
    entity_type: TypeStr = Field(alias="entityType", description="The type of the entity")
    observations: list[Observation] = Field(
        default_factory=list,
        max_length=2000,
        description="An array of observation contents associated with the entity",
    )


class Relation(_Shape):
    from_: EntityName = Field(
        alias="from", description="The name of the entity where the relation starts"
    )
    to: EntityName = Field(description="The name of the entity where the relation ends")
    relation_type: ShortStr = Field(alias="relationType", description="The type of the relation")

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.from_, self.relation_type, self.to)


class ObservationsToAdd(_Shape):
    entity_name: EntityName = Field(
        alias="entityName", description="The name of the entity to add the observations to"
    )
    contents: list[Observation] = Field(
        max_length=2000, description="An array of observation contents to add"
    )


class ObservationsToDelete(_Shape):
    entity_name: EntityName = Field(
        alias="entityName", description="The name of the entity containing the observations"
    )
    observations: list[Observation] = Field(
        max_length=2000, description="An array of observations to delete"
    )


class AddedObservations(_Shape):
    entity_name: str = Field(alias="entityName")
    added_observations: list[str] = Field(alias="addedObservations")


@dataclass(frozen=True)
class EntityState:
    """An entity as it stands: the state its stream's newest event gives it."""

    name: str
    entity_type: str
    observations: tuple[str, ...]

    def as_entity(self) -> Entity:
        return Entity(
            name=self.name, entity_type=self.entity_type, observations=list(self.observations)
        )


def stream_of(name: str) -> str:
    """Each entity is a stream: its changes are ordered and version-checked."""
    return f"{ID_PREFIX}{name}"


#: the events that say what an entity is (its stream also holds its outgoing relations)
ENTITY_EVENT_TYPES = tuple(c.event_type for c in ENTITY_EVENTS)


def state_of(head: RecordedEvent | None) -> EntityState | None:
    """The entity after its newest entity event (None: never created, or deleted)."""
    if head is None:
        return None
    event = head.event
    if isinstance(event, MemoryEntityCreated | MemoryObservationsAdded | MemoryObservationsDeleted):
        return EntityState(event.name, event.entity_type, event.observations)
    return None
