"""``kg server status|stop``: the project's embedded server seen and stopped from outside.

Neither function attaches to the server (attaching would make the caller one of its holders
and, for ``status``, start a stopped server); both read the wheel's files in the data folder,
prune the handles of processes that are gone (:mod:`kg.host.handles`) and act under the
wheel's lock, so no ``kg`` process attaches while the server is being stopped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from kg.errors import ServerInUseError
from kg.host import handles
from kg.host.postmaster import find_postmaster, stop_postmaster


@dataclass(frozen=True, slots=True)
class ServerStatus:
    pgdata: Path
    initialised: bool
    pid: int | None  # the postmaster's, when running
    started: datetime | None
    socket_dir: Path | None
    holders: tuple[handles.Holder, ...]
    pruned: tuple[int, ...]

    @property
    def running(self) -> bool:
        return self.pid is not None


def server_status(pgdata: Path) -> ServerStatus:
    """Whether the server on ``pgdata`` runs, and which live processes hold it (the handles
    of processes that are gone are pruned, and reported)."""
    held = handles.prune(pgdata) if pgdata.is_dir() else handles.Handles((), ())
    return _status(pgdata, held)


def _status(pgdata: Path, held: handles.Handles) -> ServerStatus:
    initialised = (pgdata / "PG_VERSION").exists()
    found = find_postmaster(pgdata) if initialised else None
    pid, started, socket = found if found is not None else (None, None, None)
    return ServerStatus(pgdata, initialised, pid, started, socket, held.live, held.pruned)


def stop_server(pgdata: Path, *, force: bool = False) -> ServerStatus:
    """Stop the server on ``pgdata`` (a fast shutdown: open transactions roll back) and return
    the status it was stopped from; a server that is not running is left alone.

    Raises:
        ServerInUseError: live ``kg`` processes hold it and ``force`` is false.
        DatabaseUnavailableError: the server did not stop.
    """
    if not pgdata.is_dir():
        return server_status(pgdata)
    _stop_background_watcher(pgdata, force=force)
    with handles.server_lock(pgdata):
        held = handles.prune_locked(pgdata)
        status = _status(pgdata, held)
        if status.pid is None:
            return status
        others = [h for h in held.live if h.pid != os.getpid()]
        if others and not force:
            listed = "; ".join(f"pid {h.pid} ({_short(h.command)})" for h in others)
            raise ServerInUseError(
                f"the embedded server in {pgdata} is in use by {len(others)} kg process(es): "
                f"{listed}. Stop them first, or rerun with --force (their database "
                "connections are cut and their transactions rolled back)."
            )
        stop_postmaster(pgdata, status.pid)
    from kg.host.idle import stop_watchdog

    stop_watchdog(pgdata)
    return status


def _stop_background_watcher(pgdata: Path, *, force: bool) -> None:
    """``kg watch --background`` holds the server for as long as it runs and stops with it:
    first, unless other kg processes hold the server too and ``force`` is false (then the
    refusal below names them, and the watcher keeps running)."""
    from kg.host.watcher import running_watcher, stop_watcher

    state_dir = pgdata.parent
    watcher = running_watcher(state_dir)
    if watcher is None:
        return
    if not force:
        held = handles.prune(pgdata)
        if any(h.pid not in (os.getpid(), watcher.pid) for h in held.live):
            return
    stop_watcher(state_dir)


def _short(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 3] + "..."
