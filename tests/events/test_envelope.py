"""A recorded event read from the store: payload and metadata decoded when first read."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from kg.events.envelope import RecordedEvent
from kg.events.store import record_from_row

ROW = (
    7, "0b7c6f2e-0000-4000-8000-000000000007", "acme", "p", "s", 1, "NodeAsserted", 1,
    '{"name": "Alpha", "node_id": "component:a", "node_type": "Component"}',
    '{"actor": "ana"}', datetime(2026, 1, 1, tzinfo=UTC), None, "0" * 64, "1" * 64, None,
)  # fmt: skip


def test_a_row_with_json_text_reads_as_the_same_event_as_one_given_dicts() -> None:
    from_row = record_from_row(ROW)  # type: ignore[arg-type]
    decoded = RecordedEvent(
        *ROW[:8],  # type: ignore[arg-type]
        {"name": "Alpha", "node_id": "component:a", "node_type": "Component"},
        {"actor": "ana"},
        *ROW[10:],  # type: ignore[arg-type]
    )
    assert from_row.payload == decoded.payload
    assert from_row.metadata == {"actor": "ana"} and from_row.actor == "ana"
    assert from_row == decoded
    assert from_row.event == decoded.event
    assert from_row.event.model_dump()["name"] == "Alpha"


def test_replace_and_frozen_fields_behave_as_a_dataclass() -> None:
    event = record_from_row(ROW)  # type: ignore[arg-type]
    changed = dataclasses.replace(event, payload={"node_id": "component:b"})
    assert changed.payload == {"node_id": "component:b"}
    assert event.payload["node_id"] == "component:a"
    try:
        event.payload = {}  # type: ignore[misc]
    except dataclasses.FrozenInstanceError:
        pass
    else:
        raise AssertionError("a recorded event is frozen")
