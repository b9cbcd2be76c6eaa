"""Canonical JSON and the per-tenant hash chain: ``hash = sha256(prev_hash || canonical_json(event))``."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept, NaN refused: the same bytes for the same value."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def format_time(moment: datetime) -> str:
    """Timestamps enter the hash as UTC ISO-8601 with microseconds, whatever their zone."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def hashed_fields(
    *,
    position: int,
    event_id: str,
    tenant_id: str,
    project_id: str,
    stream_id: str,
    stream_version: int,
    event_type: str,
    schema_version: int,
    payload: Any,
    metadata: Any,
    recorded_at: datetime,
    idempotency_key: str | None,
) -> dict[str, Any]:
    """Every stored column except the hashes themselves: editing any of them breaks the chain."""
    return {
        "position": position,
        "event_id": event_id,
        "tenant_id": tenant_id,
        "project_id": project_id,
        "stream_id": stream_id,
        "stream_version": stream_version,
        "event_type": event_type,
        "schema_version": schema_version,
        "payload": payload,
        "metadata": metadata,
        "recorded_at": format_time(recorded_at),
        "idempotency_key": idempotency_key,
    }


def chain_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    digest.update(prev_hash.encode("ascii"))
    digest.update(canonical_json(fields).encode("utf-8"))
    return digest.hexdigest()
