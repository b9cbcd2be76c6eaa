"""``kg db distribute``: turn a kg database on a Citus coordinator into a sharded one.

Run once by the owner, after ``kg db upgrade``, against the coordinator's URL; running it again
changes nothing. What it does (each step only where not done yet):

* every table with a ``tenant_id`` column becomes a distributed table sharded by ``tenant_id``,
  co-located with ``kg_events`` (so a tenant's log, heads, tree, content, checkpoints and
  projections live together on one worker); the shared catalogues (:data:`REFERENCE_TABLES`)
  become reference tables, copied to every node; ``alembic_version`` stays on the coordinator.
  A table that is neither is an error (``tests/db/test_citus_ready.py`` keeps the list).
* the append, Merkle and erasure functions become distributed functions on their ``p_tenant``
  argument with ``force_delegation``: the coordinator hands each call to the worker holding the
  tenant's shards, where it runs as its owner (SECURITY DEFINER) on local shards. The
  transaction then stays on that worker's connection, which is the application role's own
  connection: without delegation, the owner's writes reach the shards over a second connection
  (as the owner) and Citus refuses every later statement of the application role on the same
  placements ("modified in this transaction by a different user").
* the database's sessions forward ``SET LOCAL`` to the workers
  (``citus.propagate_set_commands = 'local'``): the tenant scope of row-level security
  (:func:`kg.db.tenancy.set_tenant`) must reach the shards, where the policies are evaluated.

The triggers that keep ``kg_events`` append-only and ``kg_event_content`` immutable only raise
an error, touching no other table, so they are safe on shards; Citus asks for
``citus.enable_unsafe_triggers`` to distribute a table with triggers at all, set for that
statement only.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

from kg.db.urls import asyncpg_url, redact
from kg.errors import KgError

COLOCATE_WITH = "kg_events"
DISTRIBUTION_COLUMN = "tenant_id"

REFERENCE_TABLES = ("embedding_cache", "kg_embedding_index", "kg_merkle_log")
"""Shared catalogues without a tenant: copied to every node."""

LOCAL_TABLES = ("alembic_version",)
"""Kept on the coordinator only."""

DELEGATED_FUNCTIONS = (
    "kg_append_lock(text)",
    "kg_append_events(text, text, timestamptz, text, bigint[], uuid[], text[], int[], text[], "
    "int[], text[], text[], text[], text[])",
    "kg_append_events(text, text, timestamptz, text, bigint[], uuid[], text[], int[], text[], "
    "int[], text[], text[], text[], text[], text[])",
    "kg_erase_content(text, bigint)",
    "kg_merkle_rebuild(text, integer)",
)
"""SECURITY DEFINER functions whose first argument, ``p_tenant``, names the shard they touch."""

TRIGGERED_TABLES = ("kg_events", "kg_event_content")

NESTED_FUNCTIONS = ("kg_fulltext_bm25(text, text, text[], text[], integer, float8, float8)",)
"""SECURITY DEFINER functions called inside a tenant's query (which Citus routes whole to the
tenant's worker) that read a distributed table themselves: allowed to, since their read is
pruned to the same tenant's shard on that worker by their ``p_tenant`` argument (migration
0018) and so runs locally, in the same transaction."""

_NESTED = "citus.allow_nested_distributed_execution=on"


class DistributeError(KgError):
    """The database cannot be distributed as it is; the message says what to do."""


@dataclass
class DistributeReport:
    distributed: list[str] = field(default_factory=list)
    referenced: list[str] = field(default_factory=list)
    delegated: list[str] = field(default_factory=list)
    settings: list[str] = field(default_factory=list)
    already: int = 0
    workers: int = 0

    @property
    def changed(self) -> bool:
        return bool(self.distributed or self.referenced or self.delegated or self.settings)


_TABLES = """
SELECT c.relname,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                  AND a.attname = 'tenant_id' AND NOT a.attisdropped) AS has_tenant,
       (SELECT p.partmethod FROM pg_dist_partition p WHERE p.logicalrelid = c.oid) AS method
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
 ORDER BY c.relname <> %s, c.relname
"""


def citus_version(conn: psycopg.Connection) -> str | None:
    """The Citus extension's version in this database, or None."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'citus'").fetchone()
    return None if row is None else str(row[0])


def is_distributed(conn: psycopg.Connection) -> bool:
    """Whether ``kg_events`` of this database is a Citus distributed table."""
    if citus_version(conn) is None:
        return False
    row = conn.execute(
        "SELECT 1 FROM pg_dist_partition WHERE logicalrelid = to_regclass(%s)", (COLOCATE_WITH,)
    ).fetchone()
    return row is not None


def _check_ready(conn: psycopg.Connection, url: str) -> int:
    if citus_version(conn) is None:
        where = redact(url)
        available = conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'citus'"
        ).fetchone()
        loaded = conn.execute("SELECT current_setting('shared_preload_libraries')").fetchone()
        if available is None or loaded is None or "citus" not in str(loaded[0]):
            raise DistributeError(
                f"kg db distribute needs a Citus coordinator, and the server at {where} "
                f"{'has no Citus' if available is None else 'does not load Citus'}: install "
                "the extension, add `citus` to shared_preload_libraries, restart, and add the "
                "workers (scripts/citus-cluster starts a local cluster)"
            )
        raise DistributeError(
            f"kg db distribute needs a Citus coordinator, and the database at {where} has no "
            "citus extension: run CREATE EXTENSION citus there (and in the same database on "
            "every worker), add the workers with SELECT citus_add_node(host, port), then run "
            "kg db distribute again"
        )
    workers = conn.execute("SELECT count(*) FROM citus_get_active_worker_nodes()").fetchone()
    count = int(workers[0]) if workers else 0
    if count == 0:
        raise DistributeError(
            f"the Citus coordinator at {redact(url)} has no active worker: add one with "
            "SELECT citus_add_node('host', port) (the worker needs this database with the "
            "citus and vector extensions), then run kg db distribute again"
        )
    from kg.db.revision import head_revision

    row = None
    if conn.execute("SELECT to_regclass('alembic_version')").fetchone() != (None,):
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    current = None if row is None else str(row[0])
    if current != head_revision():
        raise DistributeError(
            f"the schema at {redact(url)} is at {current or 'no revision'}, not at the head "
            f"({head_revision()}): run `kg db upgrade` against the coordinator first"
        )
    return count


def distribute(url: str) -> DistributeReport:
    """Distribute the kg database at ``url`` (a Citus coordinator, as the schema's owner)."""
    try:
        return _distribute(url)
    except psycopg.OperationalError as exc:
        from kg.db.connect import unreachable

        raise unreachable(url, exc) from None
    except psycopg.Error as exc:
        raise DistributeError(
            f"Citus refused a step of kg db distribute on {redact(url)}: {exc}. "
            "Nothing half-done stays: each table and function is one step; fix the cause and "
            "run kg db distribute again"
        ) from exc


def _distribute(url: str) -> DistributeReport:
    report = DistributeReport()
    with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
        report.workers = _check_ready(conn, url)
        tables = conn.execute(_TABLES, (COLOCATE_WITH,)).fetchall()
        unknown = [
            name
            for name, has_tenant, _ in tables
            if not has_tenant and name not in REFERENCE_TABLES and name not in LOCAL_TABLES
        ]
        if unknown:
            raise DistributeError(
                f"table(s) {', '.join(unknown)} have no tenant_id and are not known shared "
                "catalogues: add tenant_id to their keys or name them in "
                "kg.db.distribute.REFERENCE_TABLES (and tests/db/test_citus_ready.py)"
            )
        for name, has_tenant, method in tables:
            if name in LOCAL_TABLES:
                continue
            if method is not None:
                report.already += 1
                continue
            with conn.transaction():
                if name in TRIGGERED_TABLES:
                    conn.execute("SET LOCAL citus.enable_unsafe_triggers = on")
                if has_tenant:
                    colocate = "default" if name == COLOCATE_WITH else COLOCATE_WITH
                    conn.execute(
                        "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
                        (name, DISTRIBUTION_COLUMN, colocate),
                    )
                    report.distributed.append(name)
                else:
                    conn.execute("SELECT create_reference_table(%s)", (name,))
                    report.referenced.append(name)
        for signature in DELEGATED_FUNCTIONS:
            if _delegated(conn, signature):
                report.already += 1
                continue
            conn.execute(
                "SELECT create_distributed_function(%s, 'p_tenant', colocate_with => %s, "
                "force_delegation => true)",
                (signature, COLOCATE_WITH),
            )
            report.delegated.append(signature.split("(")[0])
        for signature in NESTED_FUNCTIONS:
            config = conn.execute(
                "SELECT proconfig FROM pg_proc WHERE oid = to_regprocedure(%s)", (signature,)
            ).fetchone()
            if config is None:
                raise DistributeError(f"function {signature} is missing: run `kg db upgrade`")
            if _NESTED in (config[0] or []):
                report.already += 1
                continue
            conn.execute(
                f"ALTER FUNCTION {signature} SET citus.allow_nested_distributed_execution = on"
            )
            report.settings.append(f"{signature.split('(')[0]}: {_NESTED}")
        setting = conn.execute(
            "SELECT 1 FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase "
            "WHERE d.datname = current_database() AND s.setrole = 0 "
            "AND 'citus.propagate_set_commands=local' = ANY (s.setconfig)"
        ).fetchone()
        if setting is None:
            database = conn.execute("SELECT current_database()").fetchone()
            assert database is not None
            quoted = '"' + str(database[0]).replace('"', '""') + '"'
            conn.execute(f"ALTER DATABASE {quoted} SET citus.propagate_set_commands = 'local'")
            report.settings.append("citus.propagate_set_commands = 'local'")
    return report


def _delegated(conn: psycopg.Connection, signature: str) -> bool:
    row = conn.execute(
        "SELECT distribution_argument_index IS NOT NULL AND force_delegation IS TRUE "
        "FROM pg_dist_object WHERE classid = 'pg_proc'::regclass "
        "AND objid = to_regprocedure(%s)",
        (signature,),
    ).fetchone()
    return bool(row and row[0])


def refuse_migration_if_distributed(url: str, pending: list[str]) -> None:
    """``kg db upgrade`` on a distributed database: nothing to run is fine; a pending migration
    is refused before it starts (kg's migrations are written for one node: a new table would
    stay local to the coordinator, a key change cannot be made online on shards)."""
    if not pending:
        return
    try:
        with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
            if not is_distributed(conn):
                return
    except psycopg.Error:
        return  # the migration itself reports an unreachable server
    raise DistributeError(
        f"the database at {redact(url)} is distributed with Citus (kg db distribute) and "
        f"{len(pending)} migration(s) are pending ({', '.join(pending)}): kg does not migrate a "
        "distributed database. Upgrade kg's schema before distributing: on a fresh cluster run "
        "`kg db upgrade` then `kg db distribute`; for existing data, restore a dump "
        "(pg_dump of the coordinator) on one node, run `kg db upgrade` there, load it into a "
        "fresh cluster and distribute again (docs/scale-out.md)"
    )
