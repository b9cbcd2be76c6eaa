"""The fast canonical JSON of the append path gives exactly the standard library's bytes, and
events appended through it verify against a whole-event serialisation by the standard library.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
import random
import sys
from typing import Any

import asyncpg
import pytest

from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.events import EventMetadata, EventStore, NodeAsserted
from kg.events.hashing import GENESIS_HASH, canonical_json, format_time, standard_canonical_json


def _all_code_points() -> str:
    return "".join(chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF)


def test_every_code_point_is_escaped_as_the_standard_library_does() -> None:
    text = _all_code_points()
    for start in range(0, len(text), 4096):
        chunk = text[start : start + 4096]
        value = {chunk: [chunk, {"k": chunk}]}
        assert canonical_json(value) == standard_canonical_json(value), (
            f"from U+{ord(chunk[0]):04X}"
        )


def _floats() -> list[float]:
    rng = random.Random(20261123)
    edges = [0.0, -0.0, 1.0, 0.1, 1 / 3, 5e-324, sys.float_info.max, 2.0**53, 1e15, 1e21]
    for boundary in (1e-4, 1e16, 1e-5):
        edges += [boundary, math.nextafter(boundary, 0), math.nextafter(boundary, math.inf)]
    samples = [10 ** rng.uniform(-320, 308) for _ in range(20_000)]
    samples += [rng.uniform(-1e6, 1e6) for _ in range(5_000)]
    samples += [round(rng.random(), rng.randint(0, 8)) for _ in range(5_000)]
    return edges + samples + [-x for x in edges + samples]


def test_floats_of_every_magnitude_are_written_as_the_standard_library_does() -> None:
    for x in _floats():
        value = {"w": x, "xs": [x, 1, "a"]}
        assert canonical_json(value) == standard_canonical_json(value), repr(x)


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Kind(enum.StrEnum):
    DOC = "doc"


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": {"é": None, "z": True, "\U0001f600": False, "A": [1, 2, 3]}},
        {"big": 2**64, "small": -(2**63) - 1, "u64": 2**64 - 1},
        {1: "int key", 2: "another"},
        {"level": Level.HIGH, "kind": Kind.DOC},
        ("a", ["tuple", ("nested",)]),
        "\x00\x1f\x7f\u2028",
        [],
        {},
        None,
    ],
)
def test_other_values_give_the_standard_library_result(value: Any) -> None:
    assert canonical_json(value) == standard_canonical_json(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"x": [math.nan]}])
def test_non_finite_floats_are_refused_as_before(value: Any) -> None:
    with pytest.raises(ValueError):
        standard_canonical_json(value)
    with pytest.raises(ValueError):
        canonical_json(value)


def test_what_json_cannot_hold_is_refused_as_before() -> None:
    with pytest.raises(TypeError):
        canonical_json({"colour": Colour.RED})
    with pytest.raises(TypeError):
        canonical_json({"when": object()})


async def test_appended_hashes_match_a_whole_event_serialised_by_the_standard_library(
    store: EventStore, system_pool: asyncpg.Pool
) -> None:
    scope = Scope("hash-t", "p")
    tricky = {
        "small": 1e-7,
        "large": 1e20,
        "plain": 0.25,
        "big": 2**70,
        "text": 'é "quoted" \\ \t\n\x01 \u2028 \U0001f600',
        "none": None,
        "nested": {"b": [1, 2.5, "x"], "a": {"z": 1e-5}},
    }
    events = [
        NodeAsserted(
            node_id=f"document:d{i}.md",
            node_type="Document",
            name=f"doc {i} ü",
            content="x" * i,
            properties=tricky if i % 2 else {"i": i},
            labels=("Document",),
        )
        for i in range(30)
    ]
    meta = EventMetadata(actor="ünïcode actor", source='a "source"')
    await store.append(scope, 'stream "ü"', events[:10], metadata=meta, idempotency_key="k-1")
    await store.append(scope, "other", events[10:], metadata=meta)

    rows = await system_pool.fetch(
        "SELECT position, event_id::text, tenant_id, project_id, stream_id, stream_version, "
        "event_type, schema_version, payload, metadata, recorded_at, idempotency_key, "
        "prev_hash, hash FROM kg_events WHERE tenant_id = $1 ORDER BY position",
        scope.tenant_id,
    )
    prev = GENESIS_HASH
    for i, row in enumerate(rows):
        whole = {
            key: row[key]
            for key in (
                "position",
                "event_id",
                "tenant_id",
                "project_id",
                "stream_id",
                "stream_version",
                "event_type",
                "schema_version",
                "idempotency_key",
            )
        }
        # The erasable content is stored beside the log; the payload keeps its digest.
        payload = events[i].to_payload()
        ref = row["payload"].get("$content")
        if ref is not None:
            payload = {k: v for k, v in payload.items() if k not in ref["fields"]}
            payload["$content"] = ref
        whole |= {
            "payload": payload,
            "metadata": meta.to_json(),
            "recorded_at": format_time(row["recorded_at"]),
        }
        # The standard library's bytes, with a float of 1e16 or more written out in full as
        # jsonb returns it (the one rule standard_canonical_json adds to json.dumps).
        text = json.dumps(
            whole, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        ).replace('"large":1e+20', '"large":100000000000000000000')
        expected = hashlib.sha256((prev + text).encode("utf-8")).hexdigest()
        assert row["prev_hash"] == prev and row["hash"] == expected, f"position {row['position']}"
        prev = expected
    assert len(rows) == 30


async def test_kg_audit_verify_accepts_what_the_fast_path_appended(
    store: EventStore, system_pool: asyncpg.Pool
) -> None:
    scope = Scope("verify-t", "p")
    properties = {
        "weight": 0.5,
        "n": 2**40,
        "text": "ü \x01 \u2028",
        "none": None,
        "huge": [1e20, -1.5e16, sys.float_info.max, 1e16],
        "tiny": [1e-7, 5e-324],
        "long": [2**70, -(2**64) - 1],
    }
    events = [
        NodeAsserted(
            node_id=f"document:v{i}.md", node_type="Document", name="v", properties=properties
        )
        for i in range(5)
    ]
    await store.append(scope, "s", events, idempotency_key="once")
    await store.append(scope, "t", events, metadata=EventMetadata(actor="ü"))
    report = await verify_tenant(system_pool, scope.tenant_id)
    assert report.ok and report.events == 10
    payload = await system_pool.fetchval(
        "SELECT payload FROM kg_events WHERE tenant_id = $1 LIMIT 1", scope.tenant_id
    )
    assert payload["properties"]["long"] == [2**70, -(2**64) - 1]  # read back exactly
    assert all(type(n) is int for n in payload["properties"]["long"])


def test_large_floats_are_written_as_jsonb_returns_them() -> None:
    """``kg audit verify`` re-serialises the payload jsonb returns, which writes 1e20 as
    100000000000000000000; hashing wrote 1e+20 and verification reported an edit."""
    assert standard_canonical_json({"x": 1e20, "y": [-1.5e16], "z": 1e-7}) == (
        '{"x":100000000000000000000,"y":[-15000000000000000],"z":1e-07}'
    )
    assert standard_canonical_json(sys.float_info.max).startswith("17976931348623157000")
    assert canonical_json({"x": 1e16}) == '{"x":10000000000000000}'
