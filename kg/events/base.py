"""Domain event base class, the type registry and upcasters.

A domain event is a small frozen pydantic model with a past-tense name, a stable ``event_type``
string and a ``schema_version``. Old stored payloads are brought up to the current version by
upcasters (``version n -> n+1`` functions) when read, so the log itself never changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict

from kg.errors import ValidationError
from kg.validation import clip

MAX_PROBLEMS = 5  # field errors described; the rest are counted

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]

_REGISTRY: dict[str, type[DomainEvent]] = {}
_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


class DomainEvent(BaseModel):
    """Base of every event. Subclasses set ``event_type`` and, when they change shape, bump
    ``schema_version`` and register an upcaster from the previous version."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_type: ClassVar[str]
    schema_version: ClassVar[int] = 1
    #: free-text fields stored beside the log so ``kg erase`` can remove them without breaking
    #: the hash chain (:mod:`kg.events.content`); string fields only
    erasable_fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        event_type = cls.__dict__.get("event_type")
        if event_type is None:
            return
        existing = _REGISTRY.get(event_type)
        if existing is not None and existing.__qualname__ != cls.__qualname__:
            raise TypeError(f"event type {event_type!r} is registered twice")
        _REGISTRY[event_type] = cls

    def to_payload(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def upcaster(event_type: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function turning a ``from_version`` payload of ``event_type`` into the next."""

    def register(fn: Upcaster) -> Upcaster:
        _UPCASTERS[(event_type, from_version)] = fn
        return fn

    return register


def registered_event_types() -> list[str]:
    """Every event type declared by the event modules imported so far."""
    return sorted(_REGISTRY)


def event_class(event_type: str) -> type[DomainEvent]:
    try:
        return _REGISTRY[event_type]
    except KeyError:
        raise ValidationError(
            f"unknown event type {event_type!r}: no DomainEvent subclass declares it "
            "(is the module that defines it imported?)"
        ) from None


def decode_event(event_type: str, schema_version: int, payload: dict[str, Any]) -> DomainEvent:
    """Upcast a stored payload to the current version of its class and validate it."""
    cls = event_class(event_type)
    version = schema_version
    while version < cls.schema_version:
        step = _UPCASTERS.get((event_type, version))
        if step is None:
            raise ValidationError(
                f"no upcaster for {event_type} from version {version} to {cls.schema_version}"
            )
        payload = step(payload)
        version += 1
    if version > cls.schema_version:
        raise ValidationError(
            f"{event_type} version {version} is newer than this code knows "
            f"({cls.schema_version}); upgrade kg"
        )
    return cls.model_validate(payload)


def describe_validation_error(exc: pydantic.ValidationError, what: str) -> str:
    """``what: field 'a.b': reason; field 'c': reason`` for a pydantic error."""
    problems = []
    errors = exc.errors(include_input=False, include_url=False)
    for err in errors[:MAX_PROBLEMS]:
        field = ".".join(str(part) for part in err["loc"]) or "(root)"
        # A field name may be a key the caller chose (of any length): clipped like a value.
        problems.append(f"field {clip(field)}: {err['msg'][:300]}")
    if len(errors) > MAX_PROBLEMS:
        problems.append(f"and {len(errors) - MAX_PROBLEMS} more")
    return f"{what} is invalid: " + "; ".join(problems)


E = TypeVar("E", bound=DomainEvent)


def build_event(cls: type[E], **fields: Any) -> E:
    """Construct an event, turning pydantic's error into a :class:`ValidationError` that names
    each field and the reason."""
    try:
        return cls(**fields)
    except pydantic.ValidationError as exc:
        raise ValidationError(describe_validation_error(exc, cls.__name__)) from None
