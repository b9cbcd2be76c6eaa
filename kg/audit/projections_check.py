"""``kg audit verify --projections``: every projection equals a fresh replay of the log.

The live projections' digests and checkpoints are read in one snapshot; a scratch schema then
replays each projection up to exactly its checkpoints (one per tenant: positions are per
tenant), and the digests of every row are compared.
A difference means a projection row was changed behind the log's back (or a projection is not
deterministic); the report names a few of the differing rows by key.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

import asyncpg

from kg.audit.replay import create_replay_schema, drop_replay_schema, schema_pool
from kg.embeddings.base import EmbeddingProvider
from kg.embeddings.cache import index_model
from kg.errors import EmbeddingError
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.projections.digest import TABLE_KEYS, table_digest


@dataclass(frozen=True)
class ProjectionCheck:
    table: str
    position: int
    live: str
    replayed: str
    differing: tuple[str, ...] = ()
    #: what was left out of the comparison, and why (vectors, while nodes wait for theirs)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.live == self.replayed

    def __str__(self) -> str:
        note = f" ({self.note})" if self.note else ""
        if self.ok:
            return f"{self.table}: ok at position {self.position} (digest {self.live[:16]}…){note}"
        rows = f"; differing rows: {', '.join(self.differing)}" if self.differing else ""
        return (
            f"{self.table}: DIFFERS from a replay at position {self.position} (live "
            f"{self.live[:16]}…, replayed {self.replayed[:16]}…){rows}{note}"
        )


async def _vectors_left_out(
    conn: asyncpg.Connection, embedder: EmbeddingProvider, tenant_id: str | None
) -> str:
    """Why kg_nodes' vectors cannot be compared with a replay's ('' when they can): nodes
    wait for theirs (the embedder was unavailable when they were projected), or the embedder
    does not answer now (the replay would have none). Content, names, hashes and every other
    column are still compared."""
    waiting = await conn.fetchval(
        "SELECT count(*) FROM kg_nodes WHERE embedding IS NULL "
        "AND ($1::text IS NULL OR tenant_id = $1)",
        tenant_id,
    )
    if waiting:
        return f"vectors not compared: {waiting} node(s) wait for an embedding"
    try:
        await asyncio.to_thread(embedder.embed, ["probe"])
    except EmbeddingError as error:
        return f"vectors not compared: {error}"
    return ""


async def _differing(
    conn: asyncpg.Connection, schema: str, table: str, tenant_id: str | None
) -> tuple[str, ...]:
    key = TABLE_KEYS[table]
    rows = await conn.fetch(
        f"SELECT concat_ws('/', {key}) AS k FROM ("
        f'(SELECT * FROM public.{table} EXCEPT ALL SELECT * FROM "{schema}".{table}) UNION ALL '
        f'(SELECT * FROM "{schema}".{table} EXCEPT ALL SELECT * FROM public.{table})) d '
        "WHERE $1::text IS NULL OR d.tenant_id = $1 ORDER BY 1 LIMIT 5",
        tenant_id,
    )
    return tuple(dict.fromkeys(str(r["k"]) for r in rows))


async def verify_projections(
    pool: asyncpg.Pool, url: str, embedder: EmbeddingProvider, tenant_id: str | None = None
) -> list[ProjectionCheck]:
    """Compare each projected table with a replay at the same position (``pool``: system).

    With ``tenant_id`` only that tenant's rows are compared and named: what a tenant's reviewer
    runs, which says nothing about other tenants."""
    async with pool.acquire() as conn:
        model = await index_model(conn)
    if model is not None and model != embedder.model_id:
        raise EmbeddingError(
            f"the projections hold vectors of {model}, but the configured embedder is "
            f"{embedder.model_id}: set KG_EMBEDDER to match, or a replay cannot be compared"
        )
    names = [p.name for p in default_projections() if p.name in TABLE_KEYS]
    async with pool.acquire() as conn:
        left_out = await _vectors_left_out(conn, embedder, tenant_id)
    omit = {"kg_nodes": "embedding"} if left_out else {}
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
        rows = await conn.fetch(
            "SELECT tenant_id, name, position FROM projection_checkpoints "
            "WHERE name = ANY($1) AND ($2::text IS NULL OR tenant_id = $2) "
            "ORDER BY tenant_id, name",
            names,
            tenant_id,
        )
        # Positions are per tenant: each tenant's rows are replayed up to its own checkpoint.
        checkpoints: dict[str, dict[str, int]] = {name: {} for name in names}
        for r in rows:
            checkpoints[r["name"]][r["tenant_id"]] = int(r["position"])
        live = {
            name: await table_digest(conn, name, tenant_id, omit=omit.get(name)) for name in names
        }
    schema = f"kg_verify_{uuid.uuid4().hex[:12]}"
    await create_replay_schema(pool, schema)
    try:
        checks = []
        async with schema_pool(url, schema) as scratch:
            runner = ProjectionRunner(
                scratch, default_projections(), ProjectionContext(embedder), maintain_indexes=False
            )
            for name in names:
                for tenant, until in checkpoints[name].items():
                    await runner.catch_up([name], tenant_id=tenant, until=until)
                position = max(checkpoints[name].values(), default=0)
                replayed = await table_digest(scratch, name, tenant_id, omit=omit.get(name))
                differing: tuple[str, ...] = ()
                if replayed != live[name]:
                    async with pool.acquire() as conn:
                        differing = await _differing(conn, schema, name, tenant_id)
                note = left_out if name in omit else ""
                checks.append(
                    ProjectionCheck(name, position, live[name], replayed, differing, note)
                )
    finally:
        await drop_replay_schema(pool, schema)
    return sorted(checks, key=lambda c: names.index(c.table))
