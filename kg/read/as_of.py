"""Kept replays: the graph as it was at a past position, in its own schema, read-only.

``kg audit replay --until P`` projects one tenant's log up to its position ``P`` (positions are
per tenant) into a schema and *freezes* it:

* the log itself is seen as it was: the schema gets views ``kg_events`` (the tenant's events up
  to ``P``), ``kg_chain_heads`` (the tenant's chain head at ``P``) and ``kg_merkle_nodes`` (the
  Merkle subtrees of its tree completed by ``P``), which
  shadow the public tables for any connection whose ``search_path`` puts the schema first, so
  lineage, the trail and ``kg audit verify`` also stop at ``P``;
* tenancy holds: the projected tables get the row-level security policies of their public
  originals, and the application role only ``SELECT``;
* a marker table ``kg_replay_info`` records the tenant, the position, its time and what was
  asked for; a schema without it (a replay that was interrupted) is refused.

``KG_AS_OF_SCHEMA=<schema>`` (or ``kg --as-of <schema> ...``) makes :func:`kg.runtime.open_runtime`
open both pools with that ``search_path`` and ``default_transaction_read_only``, and hand out a
store that refuses appends and a projection runner that never moves. So every read command and
MCP tool runs unchanged against the past graph, and nothing can be written to the live log or
to the replay by accident: writes fail with :class:`AsOfReadOnlyError` (or, for any other write
path, PostgreSQL's read-only transaction error).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import asyncpg

from kg.config import Scope
from kg.db.functions import SIGNATURE as FULLTEXT_SIGNATURE
from kg.errors import ConfigurationError, KgError, ValidationError
from kg.events import AppendResult, EventMetadata, EventStore
from kg.events.store import AfterAppend, StreamEvent
from kg.projections.base import Projection, ProjectionContext
from kg.projections.runner import ProjectionRunner

AS_OF_ENV = "KG_AS_OF_SCHEMA"
INFO_TABLE = "kg_replay_info"

# The read-side tables a replay schema holds (kg audit replay creates them, kg.audit.replay).
REPLAYED_TABLES = (
    "projection_checkpoints",
    "kg_embedding_index",
    "kg_nodes",
    "kg_passages",
    "kg_edges",
    "context_graphs",
    "context_graph_usage",
)
_SCHEMA = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


def check_schema_name(schema: str) -> str:
    if not _SCHEMA.match(schema) or schema in {"public", "pg_catalog", "information_schema"}:
        raise ValidationError(
            f"schema name {schema!r} is not allowed: use lowercase letters, digits and '_' "
            "(not public)"
        )
    return schema


class AsOfReadOnlyError(KgError):
    """A write was attempted while reading a kept replay."""


@dataclass(frozen=True)
class AsOf:
    schema: str
    tenant_id: str
    position: int
    recorded_at: datetime | None
    until: str

    def read_only(self, what: str = "append events") -> AsOfReadOnlyError:
        return AsOfReadOnlyError(
            f"cannot {what}: kg is reading the replay schema {self.schema!r}, the graph of "
            f"tenant {self.tenant_id!r} as of its position {self.position}, which is read-only. "
            f"Unset {AS_OF_ENV} (or drop --as-of) to work on the live graph."
        )

    def describe(self) -> str:
        when = f", recorded {self.recorded_at.isoformat()}" if self.recorded_at else ""
        return (
            f"schema {self.schema}: tenant {self.tenant_id} as of position {self.position}{when} "
            f"(--until {self.until})"
        )


def search_path(schema: str) -> str:
    return f'"{check_schema_name(schema)}", public'


async def _copy_policies(conn: asyncpg.Connection, schema: str, table: str) -> None:
    policies = await conn.fetch(
        "SELECT policyname, cmd, roles, qual, with_check FROM pg_policies "
        "WHERE schemaname = 'public' AND tablename = $1",
        table,
    )
    if not policies:
        return
    await conn.execute(f'ALTER TABLE "{schema}".{table} ENABLE ROW LEVEL SECURITY')
    for p in policies:
        roles = ", ".join(f'"{r}"' if r != "public" else "public" for r in p["roles"])
        sql = f'CREATE POLICY "{p["policyname"]}" ON "{schema}".{table} FOR {p["cmd"]} TO {roles}'
        if p["qual"]:
            sql += f" USING ({p['qual']})"
        if p["with_check"]:
            sql += f" WITH CHECK ({p['with_check']})"
        await conn.execute(sql)


async def freeze_replay_schema(
    pool: asyncpg.Pool, schema: str, tenant_id: str, position: int, until: str
) -> AsOf:
    """Turn a finished replay of ``tenant_id``'s log up to ``position`` into a kept, read-only,
    tenant-safe snapshot."""
    q = f'"{check_schema_name(schema)}"'
    p = int(position)
    async with pool.acquire() as conn, conn.transaction():
        t = await conn.fetchval("SELECT quote_literal($1::text)", tenant_id)
        recorded_at = await conn.fetchval(
            "SELECT recorded_at FROM public.kg_events WHERE tenant_id = $1 AND position = $2",
            tenant_id,
            p,
        )
        await conn.execute(
            f"CREATE VIEW {q}.kg_events WITH (security_invoker = true) AS "
            f"SELECT * FROM public.kg_events WHERE tenant_id = {t} AND position <= {p}"
        )
        await conn.execute(
            f"CREATE VIEW {q}.kg_chain_heads WITH (security_invoker = true) AS "
            "SELECT e.tenant_id, e.position, e.hash, least(h.gapless_after, e.position) "
            "AS gapless_after FROM public.kg_chain_heads h "
            "CROSS JOIN LATERAL (SELECT k.tenant_id, k.position, k.hash FROM public.kg_events k "
            f"WHERE k.tenant_id = h.tenant_id AND k.position <= {p} "
            "ORDER BY k.tenant_id, k.position DESC LIMIT 1) e "
            f"WHERE h.tenant_id = {t}"
        )
        # The Merkle tree as it was: the subtrees completed by position p (migration 0012).
        await conn.execute(
            f"CREATE VIEW {q}.kg_merkle_nodes WITH (security_invoker = true) AS "
            f"SELECT * FROM public.kg_merkle_nodes WHERE tenant_id = {t} AND position <= {p}"
        )
        for table in REPLAYED_TABLES:
            await _copy_policies(conn, schema, table)
        await conn.execute(
            f"CREATE TABLE {q}.{INFO_TABLE} (tenant_id text NOT NULL, position bigint NOT NULL, "
            "recorded_at timestamptz, until_text text NOT NULL, "
            "created_at timestamptz NOT NULL DEFAULT now())"
        )
        await conn.execute(
            f"INSERT INTO {q}.{INFO_TABLE} (tenant_id, position, recorded_at, until_text) "
            "VALUES ($1, $2, $3, $4)",
            tenant_id,
            p,
            recorded_at,
            until,
        )
        await conn.execute(f"GRANT USAGE ON SCHEMA {q} TO kg_app")
        await conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA {q} TO kg_app")
    return AsOf(schema, tenant_id, p, recorded_at, until)


async def load_as_of(pool: asyncpg.Pool, schema: str, *, to_read: bool = True) -> AsOf:
    """The kept replay named ``schema``, or a clear error saying how to make one (or, when it
    is to be read, how to remake one an older kg made)."""
    q = f'"{check_schema_name(schema)}"'
    try:
        row = await pool.fetchrow(f"SELECT * FROM {q}.{INFO_TABLE} LIMIT 1")
    except (asyncpg.UndefinedTableError, asyncpg.InvalidSchemaNameError):
        row = None
    if row is None:
        raise ConfigurationError(
            f"{AS_OF_ENV}={schema}: there is no finished replay by that name. Make one with "
            f"`kg audit replay --until POSITION --schema {schema}`; `kg audit replay --list` "
            "shows the kept ones"
        )
    # A replay kept from before migration 0015 has no full-text function of its own (BM25), and
    # unqualified calls would reach public's, i.e. today's graph instead of the replay's; one
    # kept before 0018 has it without the tenant argument today's search passes, one kept before
    # 0020 with the tsquery argument it no longer takes.
    # A replay kept before positions were per tenant (migration 0013) covers every tenant at a
    # global position: today's tables and tools cannot read it.
    per_tenant = "tenant_id" in dict(row.items())
    current = not to_read or (
        per_tenant
        and await pool.fetchval(
            "SELECT to_regprocedure(format('%I.kg_fulltext_bm25(%s)', $1::text, $2::text)) "
            "IS NOT NULL",
            schema,
            FULLTEXT_SIGNATURE,
        )
    )
    if not current:
        raise ConfigurationError(
            f"{AS_OF_ENV}={schema}: that replay was made by an older kg and cannot be searched "
            f"correctly. Make it again: `kg audit replay --until {row['until_text']} "
            f"--schema {schema}` (after `kg audit replay --drop {schema}`)"
        )
    tenant = row["tenant_id"] if per_tenant else "(every tenant: made before per-tenant order)"
    return AsOf(schema, tenant, int(row["position"]), row["recorded_at"], row["until_text"])


async def list_replays(pool: asyncpg.Pool) -> list[AsOf]:
    rows = await pool.fetch(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = $1 "
        "ORDER BY table_schema",
        INFO_TABLE,
    )
    return [await load_as_of(pool, r["table_schema"], to_read=False) for r in rows]


class ReadOnlyEventStore(EventStore):
    """The store of an as-of runtime: reads see the log up to the replay's position (through
    the schema's ``kg_events`` view); appends are refused before touching the database."""

    def __init__(self, pool: asyncpg.Pool, as_of: AsOf) -> None:
        super().__init__(pool)
        self.as_of = as_of

    async def append_many(
        self,
        scope: Scope,
        items: Sequence[StreamEvent],
        *,
        expected_versions: Mapping[str, int] | None = None,
        idempotency_key: str | None = None,
        metadata: EventMetadata | None = None,
        then: AfterAppend | None = None,
    ) -> list[AppendResult]:
        """Every append (single-stream ``append`` included) goes through here: refuse it."""
        raise self.as_of.read_only()


class FrozenProjectionRunner(ProjectionRunner):
    """The projections of a kept replay stay at its position: catch-up applies nothing (the
    log beyond the position is not there for them), rebuild and run are refused."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        projections: Sequence[Projection],
        ctx: ProjectionContext,
        as_of: AsOf,
    ) -> None:
        super().__init__(pool, projections, ctx, maintain_indexes=False)
        self.as_of = as_of

    async def _ensure_rows(self, conn: asyncpg.Connection, tenants: Sequence[str]) -> None:
        return None  # the replay wrote every checkpoint row; the transaction is read-only

    async def catch_up(
        self,
        names: Sequence[str] | None = None,
        *,
        tenant_id: str | None = None,
        until: int | None = None,
        analyze: bool = True,
        in_lanes: bool = False,
    ) -> int:
        return 0

    async def rebuild(self, names: Sequence[str] | None = None) -> int:
        raise self.as_of.read_only("rebuild projections")

    async def run(self, stop: asyncio.Event, *, poll_interval: float = 1.0) -> None:
        raise self.as_of.read_only("run the projections")
