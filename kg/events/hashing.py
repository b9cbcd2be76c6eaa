"""Canonical JSON and the per-tenant hash chain.

``hash = sha256(prev_hash || canonical_json(event))``

The canonical form is defined by :func:`standard_canonical_json`: the standard library's
``json.dumps`` with sorted keys, no whitespace and UTF-8 kept. Appending, verifying and hashing
context graphs all serialise a lot, so :func:`canonical_json` (what every caller uses) and
:class:`EventCanonicaliser` produce the same bytes with orjson where orjson is known to agree,
and fall back to the standard library everywhere else; tests compare both on every code point
and on floats of every magnitude.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import orjson

GENESIS_HASH = "0" * 64

# Floats whose shortest representation both libraries write without an exponent: Python's
# repr switches to exponent notation below 1e-4 and from 1e16 on, orjson writes those
# differently (``1e-7`` for ``1e-07``, ``0.00001`` for ``1e-05``).
_PLAIN_FLOAT_MIN = 1e-4
_PLAIN_FLOAT_MAX = 1e16


def standard_canonical_json(value: Any, *, signed_zero: bool = False) -> str:
    """The definition of the canonical form (:func:`canonical_json` is the fast path): sorted
    keys, no whitespace, UTF-8 kept, NaN refused: the same bytes for the same value.

    A float of magnitude 1e16 or more is written as the integer its shortest form denotes
    (``100000000000000000000``, not ``1e+20``): that is how PostgreSQL's jsonb gives such a
    number back, so ``kg audit verify``, which re-serialises the stored payload, arrives at
    the bytes that were hashed. (Smaller floats come back as the same float.) Negative zero is
    written ``0.0``: jsonb's numeric has no sign for zero and gives ``0.0`` back. A string that
    cannot be UTF-8 (a lone surrogate) is refused with ``ValueError``, as NaN is.

    ``signed_zero`` keeps the sign of zero, as kg did before: only ``kg audit verify`` uses it,
    for events written then (:mod:`kg.audit.legacy`)."""
    return json.dumps(
        _as_stored(value, signed_zero),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def _as_stored(value: Any, signed_zero: bool = False) -> Any:
    if isinstance(value, float):
        if value == 0.0 and not signed_zero:
            return 0.0  # -0.0 too
        if math.isfinite(value) and abs(value) >= _PLAIN_FLOAT_MAX:
            return int(Decimal(repr(value)))
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(
                f"text holds an unpaired surrogate ({value[exc.start : exc.end]!a}) at character "
                f"{exc.start}, which is not valid Unicode: fix the text's encoding"
            ) from None
        return value
    if isinstance(value, dict):
        return {_as_stored(k): _as_stored(v, signed_zero) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_as_stored(v, signed_zero) for v in value]
    return value


def canonical_json(value: Any) -> str:
    """The canonical JSON of ``value``: :func:`standard_canonical_json`'s bytes, ten times
    faster for what ``model_dump(mode="json")`` returns.

    orjson writes every string (escapes included), integer, boolean and null, and sorts keys,
    exactly as the standard library does here; floats agree unless exponent notation is
    involved. Anything else (such a float, NaN, an integer beyond 64 bits, a subclass of a JSON
    type, a non-string key, a non-JSON object) goes to :func:`standard_canonical_json`, which
    decides.
    """
    if _orjson_agrees(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:  # an integer beyond 64 bits, or a string with a lone surrogate
            pass
    return standard_canonical_json(value)


def canonical_json_plain(value: Any) -> tuple[str, bool]:
    """:func:`canonical_json`, and whether ``value`` is plain JSON that jsonb gives back
    equal (what the orjson path takes: strings, integers, booleans, null and floats written
    without exponent, in dicts with string keys and lists): then ``value`` itself is what a
    read of the stored text returns, and need not be parsed again."""
    if _orjson_agrees(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode(), True
        except TypeError:  # an integer beyond 64 bits, or a string with a lone surrogate
            pass
    return standard_canonical_json(value), False


def _orjson_agrees(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        # False for NaN and the infinities too (every comparison with NaN is false).
        # orjson writes -0.0 with its sign: the standard path writes it as jsonb gives it back.
        if value == 0.0:
            return math.copysign(1.0, value) > 0
        return bool(_PLAIN_FLOAT_MIN <= abs(value) < _PLAIN_FLOAT_MAX)
    if kind is dict:
        return all(type(k) is str and _orjson_agrees(v) for k, v in value.items())
    if kind is list or kind is tuple:
        return all(_orjson_agrees(v) for v in value)
    return False


def format_time(moment: datetime) -> str:
    """Timestamps enter the hash as UTC ISO-8601 with microseconds, whatever their zone."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _dump(value: str | None) -> str:
    """A JSON string (or null); orjson escapes exactly as ``json.dumps(ensure_ascii=False)``."""
    return orjson.dumps(value).decode()


class EventCanonicaliser:
    """:func:`canonical_event` for many events that share tenant, project, recording time and
    idempotency key (one append): those parts are serialised once, and each stream id and
    event type once per batch."""

    def __init__(
        self,
        *,
        tenant_id: str,
        project_id: str,
        recorded_at: datetime,
        idempotency_key: str | None,
    ) -> None:
        self._key = f'"idempotency_key":{_dump(idempotency_key)},'
        self._tail = f'"project_id":{_dump(project_id)},"recorded_at":"{format_time(recorded_at)}",'
        self._tenant = f'"tenant_id":{_dump(tenant_id)}}}'
        self._strings: dict[str, str] = {}

    def _string(self, value: str) -> str:
        text = self._strings.get(value)
        if text is None:
            text = self._strings[value] = _dump(value)
        return text

    def __call__(
        self,
        *,
        position: int,
        event_id: str,
        stream_id: str,
        stream_version: int,
        event_type: str,
        schema_version: int,
        payload_json: str,
        metadata_json: str,
    ) -> str:
        return (
            f'{{"event_id":{_dump(event_id)},"event_type":{self._string(event_type)},'
            f'{self._key}"metadata":{metadata_json},"payload":{payload_json},'
            f'"position":{position},{self._tail}"schema_version":{schema_version},'
            f'"stream_id":{self._string(stream_id)},"stream_version":{stream_version},'
            f"{self._tenant}"
        )


def canonical_event(
    *,
    position: int,
    event_id: str,
    tenant_id: str,
    project_id: str,
    stream_id: str,
    stream_version: int,
    event_type: str,
    schema_version: int,
    payload_json: str,
    metadata_json: str,
    recorded_at: datetime,
    idempotency_key: str | None,
) -> str:
    """``canonical_json`` of the stored event: every column except the hashes themselves, so
    editing any of them breaks the chain.

    ``payload_json`` and ``metadata_json`` must already be canonical; splicing them in (keys in
    sorted order) gives the same text as serialising the whole dict, without serialising the
    payload a second time on the append hot path.
    """
    canonicalise = EventCanonicaliser(
        tenant_id=tenant_id,
        project_id=project_id,
        recorded_at=recorded_at,
        idempotency_key=idempotency_key,
    )
    return canonicalise(
        position=position,
        event_id=event_id,
        stream_id=stream_id,
        stream_version=stream_version,
        event_type=event_type,
        schema_version=schema_version,
        payload_json=payload_json,
        metadata_json=metadata_json,
    )


def chain_hash(prev_hash: str, canonical: str) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical.encode("utf-8")).hexdigest()
