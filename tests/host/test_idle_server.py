"""The warm embedded server: it outlives the last ``kg`` for ``KG_SERVER_IDLE`` seconds, the
next ``kg`` attaches to it instead of starting one, and an idle watchdog stops it afterwards.
Real ``kg`` processes on a real embedded server."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from kg.host.idle import watchdog_pid
from tests.support import kg, wait_for

IDLE = 10
"""Seconds the server outlives the last kg here: long enough that the next command of a test
starts within it on a loaded machine (at 3 s, a parallel run under load saw the server stop
between two commands), short enough that the test then watches it stop."""


@pytest.fixture
def project() -> Iterator[tuple[Path, dict[str, str]]]:
    """An initialised project whose server stays up IDLE s after the last kg (short path: the
    server's socket lives in it). Stopped and removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="kg-idle-"))
    (root / ".kg").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL", "XDG_RUNTIME_DIR")}
    env.update(KG_PROJECT_ROOT=str(root), KG_EMBEDDER="hashing", KG_SERVER_IDLE=str(IDLE))
    done = kg("init", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    yield root, env
    kg("server", "stop", "--force", env=env, cwd=root)
    shutil.rmtree(root, ignore_errors=True)


def postmaster(root: Path) -> int | None:
    try:
        pid = int((root / ".kg/pgdata/postmaster.pid").read_text().splitlines()[0])
        process = psutil.Process(pid)
        alive = "postgres" in process.name() and process.status() != psutil.STATUS_ZOMBIE
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    return pid if alive else None


def test_the_server_stays_warm_between_commands_and_stops_when_idle(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    pgdata = root / ".kg/pgdata"
    server = postmaster(root)
    assert server is not None, "kg init's server outlives it"
    wait_for(lambda: watchdog_pid(pgdata) is not None, "the last kg started the idle watchdog")

    status = kg("server", "status", env=env, cwd=root)
    assert f"running (pid {server}" in status.stdout
    assert f"held by no kg process: it stops {IDLE} s after the last kg exited" in status.stdout

    again = kg("status", env=env, cwd=root)
    assert again.returncode == 0, again.stderr
    assert postmaster(root) == server, "the next kg attached to the warm server"

    wait_for(lambda: postmaster(root) is None, "the watchdog stopped the idle server")
    wait_for(lambda: watchdog_pid(pgdata) is None, "the watchdog exited")
    assert ": not running" in kg("server", "status", env=env, cwd=root).stdout

    revived = kg("status", env=env, cwd=root)
    assert revived.returncode == 0, revived.stderr
    assert postmaster(root) not in (None, server), "a kg after the stop starts a new server"


def test_kg_server_stop_ends_the_warm_server_and_its_watchdog(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    pgdata = root / ".kg/pgdata"
    wait_for(lambda: watchdog_pid(pgdata) is not None, "the last kg started the idle watchdog")
    stopped = kg("server", "stop", env=env, cwd=root)
    assert stopped.returncode == 0, stopped.stderr
    assert postmaster(root) is None
    wait_for(lambda: watchdog_pid(pgdata) is None, "the watchdog saw the server gone")


def test_commands_racing_the_idle_stop_all_succeed_on_one_server(
    project: tuple[Path, dict[str, str]],
) -> None:
    """Shells running kg while the watchdog stops the server: each command either attaches
    before the stop or starts the server again after it; none fails, and the data folder never
    has two servers (PostgreSQL would refuse the second: its start would fail the command)."""
    import subprocess
    import sys

    root, env = project
    quick = {**env, "KG_SERVER_IDLE": "1"}
    assert kg("server", "stop", env=env, cwd=root).returncode == 0
    wait_for(lambda: watchdog_pid(root / ".kg/pgdata") is None, "init's watchdog saw the stop")
    servers: set[int] = set()
    for _ in range(4):
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "kg.cli", "status"],
                env=quick,
                cwd=root,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        for proc in procs:
            _, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        found = postmaster(root)
        if found is not None:
            servers.add(found)
        time.sleep(1.5)  # past the idle period: the next round races the watchdog's stop
    log = (root / ".kg/pgdata/log").read_text(errors="replace")
    assert 'lock file "postmaster.pid" already exists' not in log, "a second server was tried"
    assert servers, "the commands ran on a server"


def test_the_first_command_after_the_server_is_killed_succeeds(
    project: tuple[Path, dict[str, str]],
) -> None:
    """Issue 30 A6: the first command after the embedded server was ``kill -9``ed failed with
    ``Connection refused`` (the next one restarted it). The warm server is killed, its
    postmaster.pid left behind; the very next ``kg`` works, on a new server."""
    import signal

    root, env = project
    server = postmaster(root)
    assert server is not None
    os.kill(server, signal.SIGKILL)
    wait_for(lambda: postmaster(root) is None, "the server died")

    first = kg("status", env=env, cwd=root)
    assert first.returncode == 0, first.stderr
    assert "refused" not in first.stderr.lower()
    assert postmaster(root) not in (None, server), "the first kg started a new server"
