"""Canonical JSON is exactly what jsonb gives back, for every JSON value (property-based).

The append hashes the canonical JSON of the payload; ``kg audit verify`` re-serialises what
PostgreSQL returns. Any value whose bytes change on that round trip (``-0.0`` did: jsonb keeps
no sign on zero) would make an honest log fail verification forever. Generated payloads go
through the real database and must verify.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kg.audit.verify import recompute_hash, verify_tenant
from kg.config import Scope
from kg.db.connect import create_pool
from kg.errors import ValidationError
from kg.events import EventStore, NodeAsserted
from kg.events.hashing import canonical_json, standard_canonical_json

SCOPE = Scope("roundtrip", "p")

# Text PostgreSQL can hold: no NUL (refused with a clear error elsewhere), no lone surrogates.
text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [-0.0, 0.0, 5e-324, -5e-324, 1e-7, 1.5e15, 1e16, -1e16, 9.999999999999999e15, 1.7e308]
)
integers = st.integers() | st.integers(min_value=-(2**200), max_value=2**200)
scalars = st.none() | st.booleans() | integers | floats | text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=30,
)


def nested(depth: int) -> Any:
    value: Any = -0.0
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


class Harness:
    """A pool on a loop of the test's own, for a synchronous property test."""

    def __init__(self, url: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.pool = self.loop.run_until_complete(create_pool(url, max_size=2))
        self.store = EventStore(self.pool)
        self.appended = 0

    def append_and_read_back(self, properties: dict[str, Any]) -> None:
        async def go() -> None:
            event = NodeAsserted(
                node_id="file:x", node_type="File", name="x", properties=properties
            )
            await self.store.append(SCOPE, "s", [event])
            (stored,) = await self.store.read_stream(SCOPE, "s", from_version=self.appended + 1)
            assert recompute_hash(stored) == stored.hash, canonical_json(stored.payload)

        self.loop.run_until_complete(go())
        self.appended += 1

    def verify(self) -> str:
        return str(self.loop.run_until_complete(verify_tenant(self.pool, SCOPE.tenant_id)))

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.close()


@pytest.fixture
def harness(db_url: str) -> Iterator[Harness]:
    h = Harness(db_url)
    yield h
    h.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payload=st.dictionaries(text, json_values, max_size=6))
def test_every_generated_payload_round_trips_through_jsonb_and_verifies(
    harness: Harness, payload: dict[str, Any]
) -> None:
    harness.append_and_read_back(payload)


def test_negative_zero_deep_inside_and_the_whole_log_verifies(harness: Harness) -> None:
    for properties in (
        {"confidence": -0.0},
        {"weights": [-0.0, 0.0, -1e-300, -1e300]},
        {"deep": nested(200)},
    ):
        harness.append_and_read_back(properties)
    assert harness.verify().startswith("ok, 3 events")


@given(value=json_values)
def test_the_fast_path_writes_the_bytes_the_definition_writes(value: Any) -> None:
    assert canonical_json(value) == standard_canonical_json(value)


def test_negative_zero_is_written_as_jsonb_returns_it() -> None:
    assert canonical_json({"a": -0.0, "b": [-0.0]}) == '{"a":0.0,"b":[0.0]}'
    assert math.copysign(1.0, json.loads(canonical_json(-0.0))) == 1.0


@pytest.mark.parametrize("bad", ["\ud800", "ok \udfff tail", {"\ud83d": 1}])
async def test_a_lone_surrogate_is_a_clear_error_and_writes_nothing(
    store: EventStore, scope: Scope, bad: Any
) -> None:
    event = NodeAsserted(node_id="file:x", node_type="File", name="x", properties={"v": bad})
    with pytest.raises(ValidationError, match="surrogate"):
        await store.append(scope, "s", [event])
    assert await store.count(scope) == 0
