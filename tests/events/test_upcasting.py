"""Old payloads are upcast to the current event version when read; the log never changes."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from kg.errors import ValidationError
from kg.events import DomainEvent, decode_event, upcaster


class WidgetRenamed(DomainEvent):
    event_type: ClassVar[str] = "test.WidgetRenamed"
    schema_version: ClassVar[int] = 2

    widget_id: str
    new_name: str


@upcaster("test.WidgetRenamed", from_version=1)
def _v1_to_v2(payload: dict[str, Any]) -> dict[str, Any]:
    return {"widget_id": payload["id"], "new_name": payload["name"]}


def test_v1_payload_is_upcast_to_v2() -> None:
    event = decode_event("test.WidgetRenamed", 1, {"id": "w1", "name": "Gear"})
    assert event == WidgetRenamed(widget_id="w1", new_name="Gear")


def test_payload_from_a_newer_version_is_refused() -> None:
    with pytest.raises(ValidationError, match="newer than this code knows"):
        decode_event("test.WidgetRenamed", 3, {})


def test_unknown_event_type_is_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="unknown event type 'Nope'"):
        decode_event("Nope", 1, {})
