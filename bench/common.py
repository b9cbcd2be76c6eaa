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

from kg.db import migrate
from kg.db.urls import asyncpg_url, with_database


def fresh_database() -> str:
    """A new, migrated database: on KG_DATABASE_URL's server if set, else an embedded one."""
    import psycopg

    server = os.environ.get("KG_DATABASE_URL")
    if not server:
        from kg.db.embedded import start_embedded

        server = start_embedded(
            Path(tempfile.mkdtemp(prefix="kg-bench-pg-")), database="postgres", delete_on_exit=True
        )
    name = f"kg_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(asyncpg_url(server), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
    url = with_database(server, name)
    migrate.upgrade(url)
    return url


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
