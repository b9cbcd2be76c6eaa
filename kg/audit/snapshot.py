"""``kg audit replay``: materialise the graph as of a position or a time into a kept schema."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import asyncpg

from kg.audit.replay import create_replay_schema, drop_replay_schema, replay
from kg.embeddings.base import EmbeddingProvider
from kg.errors import ValidationError
from kg.events.store import log_head, log_head_sql
from kg.progress import NO_PROGRESS, Progress
from kg.read.as_of import AsOf, check_schema_name, freeze_replay_schema

# The longest prefix of the tenant's log recorded at or before the time. Positions follow
# commit order, but recorded_at is taken just before an append waits for the tenant's lock, so
# times are not strictly monotonic in position; a prefix is what "the log as it was" can mean.
_POSITION_AT = f"""
SELECT coalesce((SELECT min(position) - 1 FROM kg_events WHERE tenant_id = $1 AND recorded_at > $2),
                {log_head_sql("$1")})
"""


def parse_time(text: str) -> datetime:
    """ISO-8601 (``2026-03-01``, ``2026-03-01T12:00:00Z``, with an offset); no zone = UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationError(
            f"{text!r} is neither a log position nor an ISO-8601 time "
            "(e.g. 1200, 2026-03-01 or 2026-03-01T12:00:00Z)"
        ) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


async def resolve_until(pool: asyncpg.Pool, tenant_id: str, until: str) -> int:
    """A position (digits) or a time (ISO-8601) as a position of ``tenant_id``'s log."""
    head = await log_head(pool, tenant_id)
    if until.strip().isdigit():
        position = int(until)
        if position > head:
            raise ValidationError(
                f"position {position} is beyond the end of tenant {tenant_id!r}'s log (last "
                f"position {head}); positions are per tenant"
            )
        return position
    return int(await pool.fetchval(_POSITION_AT, tenant_id, parse_time(until)))


def default_schema(tenant_id: str, position: int) -> str:
    """``kg_asof_<tenant>_<position>``, the tenant id folded to what a schema name allows."""
    slug = re.sub(r"[^a-z0-9_]+", "_", tenant_id.lower()).strip("_")[:30] or "tenant"
    return f"kg_asof_{slug}_{position}"


async def schema_exists(pool: asyncpg.Pool, schema: str) -> bool:
    return bool(
        await pool.fetchval("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema)
    )


async def materialise(
    pool: asyncpg.Pool,
    url: str,
    until: str,
    embedder: EmbeddingProvider,
    schema: str | None = None,
    *,
    tenant_id: str,
    progress: Progress = NO_PROGRESS,
) -> tuple[AsOf, int]:
    """Replay ``tenant_id``'s log up to ``until`` into ``schema`` (default
    ``kg_asof_<tenant>_<position>``) and keep it, frozen; returns it and the number of events
    replayed. ``pool`` is the system pool."""
    position = await resolve_until(pool, tenant_id, until)
    schema = check_schema_name(schema or default_schema(tenant_id, position))
    if await schema_exists(pool, schema):
        raise ValidationError(
            f"schema {schema!r} already exists: pass another --schema, or drop it first with "
            f"`kg audit replay --drop {schema}`"
        )
    await create_replay_schema(pool, schema)
    try:
        applied = await replay(url, schema, tenant_id, position, embedder, progress=progress)
        as_of = await freeze_replay_schema(pool, schema, tenant_id, position, until)
    except BaseException:
        await drop_replay_schema(pool, schema)
        raise
    return as_of, applied


async def drop_kept(pool: asyncpg.Pool, schema: str) -> None:
    """Drop a replay schema (finished or interrupted); refuse any other schema."""
    check_schema_name(schema)
    is_replay = await pool.fetchval("SELECT to_regclass($1) IS NOT NULL", f'"{schema}".kg_nodes')
    if not is_replay:
        raise ValidationError(f"schema {schema!r} is not a replay schema: nothing dropped")
    await drop_replay_schema(pool, schema)
