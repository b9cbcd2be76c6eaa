"""The suite runs in parallel (issue 34 item 6): ``scripts/test`` runs pytest-xdist's ``-n auto``,
each worker a session of its own (tests/conftest.py). Checked by running pytest itself, in a
subprocess, the way a developer does: in parallel on a server another session is using, and
one file without xdist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg

from kg.db.urls import asyncpg_url
from tests.support import kg

ROOT = Path(__file__).resolve().parent.parent


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
            "PYTHONPATH": str(ROOT),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=600,
    )


def _suite_in(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A parallel run (two workers, this suite's conftest) of the tests under ``root``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", *args, "-v", "-n", "2",
         "--rootdir", str(root), "tests"],
        cwd=root,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
            "PYTHONPATH": str(ROOT),
        },
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def _templates(server_url: str) -> dict[str, int]:
    with psycopg.connect(asyncpg_url(server_url)) as conn:
        rows = conn.execute(
            "SELECT datname, oid FROM pg_database WHERE datname LIKE 'kg\\_test\\_template%'"
        ).fetchall()
    return {name: int(oid) for name, oid in rows}


def test_parallel_workers_on_one_server_keep_to_their_own_templates(
    server_url: str, template_url: str
) -> None:
    """Two workers on the server this session uses (``KG_DATABASE_URL``, as on a shared
    server): each makes its own template, drops it at its end, and leaves this session's alone
    (the same name everywhere would drop it under the tests that copy it)."""
    before = _templates(server_url)
    assert urlsplit(template_url).path.lstrip("/") in before
    run = _pytest("-v", "-n", "2", "tests/events/test_tenancy.py", KG_DATABASE_URL=server_url)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = set(re.findall(r"\[(gw\d+)\] \[ *\d+%\] PASSED", run.stdout))
    assert ran == {"gw0", "gw1"}, run.stdout[-3000:]
    assert _templates(server_url) == before  # this session's, untouched; theirs, gone


def test_one_file_runs_without_xdist() -> None:
    """``-p no:xdist`` (a developer running one file): the suite's pytest-xdist hooks are
    optional, so pytest does not refuse them as unknown."""
    run = _pytest("-q", "-p", "no:xdist", "tests/test_json_text.py")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert " passed" in run.stdout


def test_plain_n_keeps_a_group_in_one_worker(tmp_path: Path) -> None:
    """``-n 2`` without ``--dist``: the tests of one group (tests/conftest.py ``SHARED``: the
    Citus tests share one cluster) run in one worker, the others wherever there is room."""
    (tmp_path / "tests/citus").mkdir(parents=True)
    (tmp_path / "tests/citus/test_grouped.py").write_text(PARAMETRISED.format(name="grouped"))
    (tmp_path / "tests/test_free.py").write_text(PARAMETRISED.format(name="free"))
    run = _suite_in(tmp_path, "-p", "no:cacheprovider")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    placed = re.findall(r"\[(gw\d+)\] \[ *\d+%\] PASSED tests/citus/test_grouped", run.stdout)
    assert len(placed) == 6 and len(set(placed)) == 1, run.stdout[-3000:]


PARAMETRISED = """
import pytest


@pytest.mark.parametrize("i", range(6))
def test_{name}(i):
    pass
"""


def test_the_longest_tests_start_first_and_each_run_keeps_its_durations(tmp_path: Path) -> None:
    """The scheduler hands out the tests the last run measured longest first, one to each
    worker, and fills a worker that holds a long test with short ones rather than queueing a
    second long one behind it (the tail of the parallel run was a long test collected late);
    the run then keeps its own durations in pytest's cache for the next."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_order.py").write_text(ORDERED.format(order=tmp_path / "order"))
    cache = tmp_path / ".pytest_cache/v/kg/durations"
    cache.parent.mkdir(parents=True)
    heavy = {f"tests/test_order.py::test_heavy[{i}]": 100.0 for i in range(3)}
    cache.write_text(json.dumps(heavy | {"tests/test_order.py::test_gone": 5.0}))
    run = _suite_in(tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    orders = [f.read_text().split() for f in sorted(tmp_path.glob("order-gw*"))]
    assert len(orders) == 2, orders
    for order in orders:  # a long one first, then short ones while it runs
        assert order[0].startswith("heavy") and order[1].startswith("light"), orders
    kept = json.loads(cache.read_text())
    assert set(kept) == {*heavy, "tests/test_order.py::test_gone"} | {
        f"tests/test_order.py::test_light[{i}]" for i in range(8)
    }
    assert all(kept[h] < 100 for h in heavy)  # this run's own figures


ORDERED = """
import os

import pytest


def _ran(name):
    with open(f"{order}-{{os.environ['PYTEST_XDIST_WORKER']}}", "a") as f:
        f.write(name + "\\n")


@pytest.mark.parametrize("i", range(8))
def test_light(i):
    _ran(f"light{{i}}")


@pytest.mark.parametrize("i", range(3))
def test_heavy(i):
    _ran(f"heavy{{i}}")
"""


def test_kg_subprocesses_get_their_wide_terminal_in_a_worker(tmp_path: Path) -> None:
    """A pytest-xdist worker has ``COLUMNS=80`` in its environment, which the tests pass on to
    the ``kg`` they run: ``tests.support.kg``'s 200 columns must still win, or a table wraps a
    name the test looks for (tests/citus/test_cli.py failed only in parallel)."""
    env = {**os.environ, "COLUMNS": "80"}
    shown = kg("--help", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert max(len(line) for line in shown.stdout.splitlines()) > 80
