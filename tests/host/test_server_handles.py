"""The embedded server's holders: a killed ``kg`` must not keep it running, and
``kg server status|stop`` show and stop it. Real ``kg`` processes, real kill -9, each test
with an embedded server of its own."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from kg.host import handles
from tests.support import kg


@pytest.fixture
def project() -> Iterator[tuple[Path, dict[str, str]]]:
    """A project (short path: the server's socket lives in it) with an initialised embedded
    server, stopped again; its environment for ``kg``. Stopped and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="kg-srv-"))
    (root / ".kg").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL", "XDG_RUNTIME_DIR")}
    env.update(KG_PROJECT_ROOT=str(root), KG_EMBEDDER="hashing")
    done = kg("init", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    yield root, env
    kg("server", "stop", "--force", env=env, cwd=root)
    shutil.rmtree(root, ignore_errors=True)


def held_pids(root: Path) -> list[int]:
    try:
        value = json.loads((root / ".kg/pgdata" / handles.PIDS_FILE).read_text())
    except (OSError, ValueError):
        return []
    return [p for p in value if isinstance(p, int)]


def start_holder(root: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A long-running ``kg`` (tailing the log) that holds the server; returns once it does."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "projections", "run"],
        env=env,
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120  # the failure mode, not a measurement
    while proc.pid not in held_pids(root):
        assert proc.poll() is None, "the holder exited"
        assert time.monotonic() < deadline, "the holder never attached"
        time.sleep(0.1)
    return proc


def kill9(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def postmaster_pid(root: Path) -> int:
    return int((root / ".kg/pgdata/postmaster.pid").read_text().splitlines()[0])


def is_postgres(pid: int) -> bool:
    try:
        process = psutil.Process(pid)
        return "postgres" in process.name() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_a_killed_kg_does_not_keep_the_server_running(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    holder = start_holder(root, env)
    server = postmaster_pid(root)
    status = kg("server", "status", env=env, cwd=root)
    assert status.returncode == 0, status.stderr
    assert f"running (pid {server}" in status.stdout
    assert f"pid {holder.pid}: " in status.stdout and "projections run" in status.stdout

    kill9(holder)
    assert holder.pid in held_pids(root), "the killed process could not let go"
    assert is_postgres(server)

    other = kg("status", env=env, cwd=root)  # takes a handle, releases it at exit
    assert other.returncode == 0, other.stderr
    assert not is_postgres(server), "the last live kg to exit stopped the server"
    assert held_pids(root) == []
    after = kg("server", "status", env=env, cwd=root)
    assert ": not running" in after.stdout, after.stdout


def test_server_stop_refuses_while_held_and_stops_once_the_holder_is_gone(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    holder = start_holder(root, env)
    server = postmaster_pid(root)
    try:
        refused = kg("server", "stop", env=env, cwd=root)
        assert refused.returncode == 1
        assert "in use by 1 kg process" in refused.stderr and f"pid {holder.pid}" in refused.stderr
        assert "--force" in refused.stderr
        assert is_postgres(server)
    finally:
        kill9(holder)

    status = kg("server", "status", env=env, cwd=root)
    assert f"running (pid {server}" in status.stdout
    assert "held by no kg process" in status.stdout
    assert f"removed the handles of processes that are gone: pid {holder.pid}" in status.stdout

    stopped = kg("server", "stop", env=env, cwd=root)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the embedded PostgreSQL in {root / '.kg/pgdata'} (pid {server})" in (
        stopped.stdout
    )
    assert not is_postgres(server)
    again = kg("server", "stop", env=env, cwd=root)
    assert again.returncode == 0 and ": not running" in again.stdout


def test_server_stop_force_stops_it_under_a_live_holder(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    holder = start_holder(root, env)
    server = postmaster_pid(root)
    try:
        forced = kg("server", "stop", "--force", env=env, cwd=root)
        assert forced.returncode == 0, forced.stderr
        assert not is_postgres(server)
    finally:
        kill9(holder)
    later = kg("status", env=env, cwd=root)  # a new kg starts a new server, stops it at exit
    assert later.returncode == 0, later.stderr
    assert ": not running" in kg("server", "status", env=env, cwd=root).stdout


def test_a_reused_pid_is_not_taken_for_the_holder_it_replaced(tmp_path: Path) -> None:
    """A pid in the list whose process started at another time than its holder noted is an
    unrelated process that got the same pid: its handle goes. A pid without a note is kept
    while it lives (a holder that is not kg, or from before notes were kept)."""
    pgdata = tmp_path / "pgdata"
    pgdata.mkdir()
    unrelated = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        me = os.getpid()
        started = psutil.Process(me).create_time()
        (pgdata / handles.PIDS_FILE).write_text(json.dumps([me, unrelated.pid, 999_999_999]))
        (pgdata / handles.STARTS_FILE).write_text(
            json.dumps({str(me): started, str(unrelated.pid): started - 3600})
        )
        found = handles.prune(pgdata)
        assert [h.pid for h in found.live] == [me]
        assert sorted(found.pruned) == sorted([unrelated.pid, 999_999_999])
        assert json.loads((pgdata / handles.PIDS_FILE).read_text()) == [me]

        (pgdata / handles.PIDS_FILE).write_text(json.dumps([me, unrelated.pid]))
        (pgdata / handles.STARTS_FILE).write_text(json.dumps({str(me): started}))
        assert [h.pid for h in handles.prune(pgdata).live] == [me, unrelated.pid]
    finally:
        unrelated.kill()
        unrelated.wait()


def test_each_project_locks_its_own_server(tmp_path: Path) -> None:
    """Attaching to one project's server does not wait for another project's (the wheel's
    default lock is one file for every server of the user)."""
    a, b = tmp_path / "a/.kg/pgdata", tmp_path / "b/.kg/pgdata"
    for pgdata in (a, b):
        pgdata.mkdir(parents=True)
    with handles.server_lock(a):
        assert (tmp_path / "a/.kg" / handles.LOCK_FILE).exists()
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from kg.host import handles\n"
                "handles.use_project_lock(Path(sys.argv[1]))\n"
                "print(handles.wheel().PostgresServer._lock.acquire(blocking=False))\n",
                str(b),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert other.stdout.strip() == "True", "another project's lock is free: " + other.stderr
        same = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from kg.host import handles\n"
                "handles.use_project_lock(Path(sys.argv[1]))\n"
                "print(handles.wheel().PostgresServer._lock.acquire(blocking=False))\n",
                str(a),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert same.stdout.strip() == "False", "the same project's lock is held"
