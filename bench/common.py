"""Shared benchmark plumbing: a throwaway embedded database, timing, and the machine line."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

from kg.db import migrate
from kg.db.urls import asyncpg_url, with_database

KEPT_SERVER = Path(__file__).resolve().parent / "out" / "pg"
COMPLETE = "kg-bench: complete"


def _server(keep: bool) -> str:
    server = os.environ.get("KG_DATABASE_URL")
    if server:
        return server
    from kg.host.embedded import start_embedded

    if keep:
        return start_embedded(KEPT_SERVER, database="postgres", keep_running=True)
    return start_embedded(
        Path(tempfile.mkdtemp(prefix="kg-bench-pg-")), database="postgres", delete_on_exit=True
    )


def fresh_database() -> str:
    """A new, migrated database: on KG_DATABASE_URL's server if set, else an embedded one."""
    import psycopg

    server = _server(keep=False)
    name = f"kg_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = with_database(server, name)
    migrate.upgrade(url)
    return url


def kept_database(name: str) -> tuple[str, bool]:
    """A named database kept between runs (``--reuse``), and whether it is already complete.

    Building a 100,000-node graph takes minutes; iterating on query latency should not. A
    database is complete once :func:`mark_complete` ran; an interrupted build is dropped and
    built again. Kept databases live in ``bench/out/pg`` (or on KG_DATABASE_URL's server).
    """
    import psycopg

    server = _server(keep=True)
    with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
        row = conn.execute(
            "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = %s",
            (name,),
        ).fetchone()
        if row is not None and row[0] == COMPLETE:
            url = with_database(server, name)
            migrate.upgrade(url)  # a kept graph gains the indexes of migrations added since
            return url, True
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = with_database(server, name)
    migrate.upgrade(url)
    return url, False


def scratch_copy(url: str) -> str:
    """A throwaway copy of a kept database (a file-level copy, seconds for a 100k graph), for
    a benchmark that writes (decisions, context graphs) and must not change what the next run
    measures. Drop it with :func:`drop_database`."""
    import psycopg

    source = urlsplit(url).path.lstrip("/")
    name = f"kg_bench_scratch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(asyncpg_url(with_database(url, "postgres")), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{source}"')  # type: ignore[arg-type]
    return with_database(url, name)


def drop_database(url: str) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(asyncpg_url(with_database(url, "postgres")), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]


def mark_complete(url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(asyncpg_url(url), autocommit=True) as conn:
        conn.execute(f"COMMENT ON DATABASE \"{name}\" IS '{COMPLETE}'")  # type: ignore[arg-type]


async def timed(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def median(values: list[float]) -> float:
    return statistics.median(values)


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))
    return ordered[index]


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = (
        subprocess.run(["free", "-g"], capture_output=True, text=True)
        .stdout.split("\n")[1]
        .split()[1]
    )
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), {mem} GiB, "
        f"Python {platform.python_version()}, {datetime.now(UTC):%Y-%m-%d}"
    )
