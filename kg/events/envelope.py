"""What goes into the store and what comes out of it, around the domain event itself."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field

from kg.events.base import DomainEvent, decode_event
from kg.events.content import content_ref, hydrate, parse_body
from kg.json_text import decode_json

E = TypeVar("E", bound=DomainEvent)
T = TypeVar("T")


class _JSONField:
    """A dataclass field holding a JSON object, given either decoded (a dict) or as the JSON
    text the database returned, which is decoded on first access and kept.

    Reading the log in bulk (a replay, a rebuild, ``read_all``) builds hundreds of thousands of
    :class:`RecordedEvent` a second; decoding every payload and metadata up front was most of
    that time, and metadata is rarely read. A data descriptor, set on the class after the
    dataclass is made (so that the fields keep no default), through which the dataclass's
    ``__init__`` (``object.__setattr__`` when frozen), ``dataclasses.replace``, ``==`` and
    ``repr`` all go: they see the decoded dict.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> _JSONField: ...
    @overload
    def __get__(self, instance: object, owner: type) -> dict[str, Any]: ...
    def __get__(self, instance: object | None, owner: type) -> _JSONField | dict[str, Any]:
        if instance is None:
            return self
        value = instance.__dict__[self.name]
        if isinstance(value, str):
            value = instance.__dict__[self.name] = decode_json(value)
        return value  # type: ignore[no-any-return]

    def __set__(self, instance: object, value: dict[str, Any] | str) -> None:
        instance.__dict__[self.name] = value


class _cached(Generic[T]):
    """``functools.cached_property`` without its lock (Python 3.11 takes an RLock on every
    first access: several microseconds, paid three times per event in a replay). Events are
    read by one task at a time; a race would only compute the same value twice."""

    def __init__(self, fn: Callable[[Any], T]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, instance: None, owner: type) -> _cached[T]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> T: ...
    def __get__(self, instance: object | None, owner: type) -> _cached[T] | T:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.fn(instance)
        return value


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
    #: the stored payload (what the chain hashed); given as a dict or as its JSON text, which
    #: is decoded when first read (so is ``metadata``: see :class:`_JSONField`)
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

    @_cached
    def domain_payload(self) -> dict[str, Any]:
        """The payload with its erasable fields put back (or ``[erased]``): what an export
        shows. :attr:`payload` is what the chain hashed."""
        return hydrate(self.payload, self.content_body)

    @_cached
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

    @_cached
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

    @_cached
    def meta(self) -> EventMetadata:
        """The metadata, validated (who, which session and tool call, the source)."""
        return EventMetadata.model_validate(self.metadata)

    @property
    def actor(self) -> str:
        return str(self.metadata.get("actor", "system"))


for _name in ("payload", "metadata"):
    _json_field = _JSONField()
    _json_field.__set_name__(RecordedEvent, _name)
    setattr(RecordedEvent, _name, _json_field)


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
