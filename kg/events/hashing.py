"""Canonical JSON and the per-tenant hash chain.

``hash = sha256(prev_hash || canonical_json(event))``
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept, NaN refused: the same bytes for the same value."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def format_time(moment: datetime) -> str:
    """Timestamps enter the hash as UTC ISO-8601 with microseconds, whatever their zone."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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
    dump = _dump
    return (
        f'{{"event_id":{dump(event_id)},"event_type":{dump(event_type)},'
        f'"idempotency_key":{dump(idempotency_key)},"metadata":{metadata_json},'
        f'"payload":{payload_json},"position":{position},"project_id":{dump(project_id)},'
        f'"recorded_at":"{format_time(recorded_at)}","schema_version":{schema_version},'
        f'"stream_id":{dump(stream_id)},"stream_version":{stream_version},'
        f'"tenant_id":{dump(tenant_id)}}}'
    )


def _dump(value: str | None) -> str:
    return json.dumps(value, ensure_ascii=False)


def chain_hash(prev_hash: str, canonical: str) -> str:
    return hashlib.sha256(prev_hash.encode("ascii") + canonical.encode("utf-8")).hexdigest()
