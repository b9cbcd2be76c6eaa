"""``kg db distribute`` on a fresh cluster database: what it distributes, that a second run
changes nothing, that it refuses a schema not at head, and that ``kg db upgrade`` on a
distributed database runs when there is nothing to do and refuses a pending migration."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from kg.cluster import nodes
from kg.config import Scope
from kg.db import migrate
from kg.db.distribute import REFERENCE_TABLES as DISTRIBUTE_REFERENCES
from kg.db.distribute import DistributeError, distribute
from kg.db.urls import asyncpg_url
from tests.citus.conftest import cli_env
from tests.db.test_citus_ready import REFERENCE_TABLES
from tests.support import kg

pytestmark = pytest.mark.citus


def _catalog(url: str) -> tuple[dict[str, tuple[str, int]], set[str], set[str]]:
    with psycopg.connect(asyncpg_url(url)) as conn:
        tables = {
            str(name): (str(method), int(colocation))
            for name, method, colocation in conn.execute(
                "SELECT logicalrelid::regclass::text, partmethod, colocationid "
                "FROM pg_dist_partition"
            ).fetchall()
        }
        tenant_tables = {
            str(r[0])
            for r in conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
                "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' "
                "AND c.relkind = 'r' AND a.attname = 'tenant_id'"
            ).fetchall()
        }
        delegated = {
            str(r[0])
            for r in conn.execute(
                "SELECT p.proname FROM pg_dist_object o JOIN pg_proc p ON p.oid = o.objid "
                "WHERE o.classid = 'pg_proc'::regclass AND o.force_delegation"
            ).fetchall()
        }
    return tables, tenant_tables, delegated


def test_distribute_a_fresh_database_then_again_from_the_cli(
    citus_cluster: nodes.Cluster, tmp_path: Path
) -> None:
    url = nodes.create_database(citus_cluster, "kg_citus_fresh")
    try:
        assert {*DISTRIBUTE_REFERENCES, "alembic_version"} == REFERENCE_TABLES
        env = cli_env(url, Scope("acme", "webshop"))
        upgraded = kg("db", "upgrade", env=env, cwd=tmp_path)
        assert upgraded.returncode == 0, upgraded.stderr
        first = kg("db", "distribute", env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert "distributed kg_events by tenant_id" in first.stdout
        assert "reference table embedding_cache" in first.stdout
        assert "function kg_append_events runs on the tenant's worker" in first.stdout
        assert f"distributed: {len(citus_cluster.workers)} worker(s)" in first.stdout

        tables, tenant_tables, delegated = _catalog(url)
        hashed = {name for name, (method, _) in tables.items() if method == "h"}
        assert hashed == tenant_tables, "every tenant table is sharded by tenant_id"
        assert len({tables[name][1] for name in hashed}) == 1, "all co-located with the log"
        assert {n for n, (m, _) in tables.items() if m == "n"} == set(DISTRIBUTE_REFERENCES)
        assert "alembic_version" not in tables
        assert delegated == {
            "kg_append_lock", "kg_append_events", "kg_erase_content", "kg_merkle_rebuild"
        }  # fmt: skip

        second = kg("db", "distribute", env=env, cwd=tmp_path)
        assert second.returncode == 0, second.stderr
        assert "already distributed, nothing to do" in second.stdout
        assert _catalog(url)[0] == tables

        # kg db upgrade with nothing pending works; a pending migration is refused, named.
        again = kg("db", "upgrade", env=env, cwd=tmp_path)
        assert again.returncode == 0, again.stderr
        with pytest.raises(DistributeError, match="distributed with Citus") as refused:
            migrate.downgrade(url, "0016")
        assert "kg db upgrade` then `kg db distribute`" in str(refused.value)
        with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
            assert conn.execute("SELECT version_num FROM alembic_version").fetchone() == (
                migrate.head_revision(),
            )
    finally:
        nodes.drop_database(citus_cluster, "kg_citus_fresh")


def test_distribute_refuses_a_schema_that_is_not_at_head(citus_cluster: nodes.Cluster) -> None:
    url = nodes.create_database(citus_cluster, "kg_citus_behind")
    try:
        migrate.upgrade(url, "0015")
        with pytest.raises(DistributeError, match=r"not at the head .* run `kg db upgrade`"):
            distribute(url)
    finally:
        nodes.drop_database(citus_cluster, "kg_citus_behind")
