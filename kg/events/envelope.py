"""What goes into the store and what comes out of it, around the domain event itself."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from kg.events.base import DomainEvent, decode_event
from kg.events.content import content_ref, hydrate, parse_body

E = TypeVar("E", bound=DomainEvent)


class EventMetadata(BaseModel):
    """Who and what caused an event. ``source`` is provenance, e.g. ``org.db/decisions#42``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str = Field(default="system", min_length=1, max_length=200)
    session_id: str | None = None
    tool_call_id: str | None = None
    correlation_id: str | None = None
    causation_id: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


@dataclass(frozen=True)
class PendingEvent:
    """An event to append with metadata of its own (overrides the append's default metadata)."""

    event: DomainEvent
    metadata: EventMetadata


@dataclass(frozen=True)
class RecordedEvent:
    """An event as stored: its place in the log, its stream, and its hash-chain links."""

    position: int
    event_id: str
    tenant_id: str
    project_id: str
    stream_id: str
    stream_version: int
    event_type: str
    schema_version: int
    payload: dict[str, Any]
    metadata: dict[str, Any]
    recorded_at: datetime
    idempotency_key: str | None
    prev_hash: str
    hash: str
    #: the erasable fields kept beside the log: the canonical JSON text of ``{"fields",
    #: "salt"}`` (migration 0014), None when the payload keeps none apart or when they were
    #: erased (see :attr:`erased`)
    content: str | None = None

    def decode(self) -> DomainEvent:
        """The domain event, upcast to the current schema version, its erasable fields put
        back (or marked erased): the one place stored content is re-hydrated."""
        return decode_event(self.event_type, self.schema_version, self.domain_payload)

    @cached_property
    def domain_payload(self) -> dict[str, Any]:
        """The payload with its erasable fields put back (or ``[erased]``): what an export
        shows. :attr:`payload` is what the chain hashed."""
        return hydrate(self.payload, self.content_body)

    @cached_property
    def content_body(self) -> dict[str, Any] | None:
        """:attr:`content` parsed: ``{"fields": {...}, "salt": ...}``."""
        return None if self.content is None else parse_body(self.content)

    @property
    def content_digest(self) -> str | None:
        """The digest of the erasable content the hash chain covers, or None."""
        ref = content_ref(self.payload)
        return None if ref is None else str(ref.get("digest"))

    @property
    def erased(self) -> bool:
        """True when this event's erasable content was erased (``kg erase``)."""
        return self.content is None and content_ref(self.payload) is not None

    @cached_property
    def event(self) -> DomainEvent:
        """The domain event, upcast and validated, decoded once: what every reader of the log
        works on. ``payload`` is the stored form, for hashing and export only: a reader that
        took fields from it by key would break at the first change of an event's schema."""
        return self.decode()

    def event_as(self, cls: type[E]) -> E:
        """:attr:`event`, which must be a ``cls``."""
        event = self.event
        if not isinstance(event, cls):
            raise TypeError(f"event at position {self.position} is a {self.event_type}, not {cls}")
        return event

    @cached_property
    def meta(self) -> EventMetadata:
        """The metadata, validated (who, which session and tool call, the source)."""
        return EventMetadata.model_validate(self.metadata)

    @property
    def actor(self) -> str:
        return str(self.metadata.get("actor", "system"))


@dataclass(frozen=True)
class AppendResult:
    """Where an append landed. ``duplicate`` is true when an idempotency key matched an earlier
    append: nothing new was written and the positions are the original ones."""

    stream_id: str
    first_position: int
    last_position: int
    from_version: int
    to_version: int
    event_ids: tuple[str, ...]
    duplicate: bool = False
