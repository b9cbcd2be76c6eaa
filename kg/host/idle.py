"""Keep the embedded server warm between commands, and stop it after an idle period.

Starting PostgreSQL costs every ``kg`` command ~0.3 s, and a developer runs many in a row
(a commit's hook, ``kg status``, a query). So the server is not stopped when the last ``kg``
process lets go of it: that process starts a small watchdog (``python -m kg.cli.watchdog``,
which runs :func:`main` here; one per data folder, detached) which stops the server once no
``kg`` process has held it for ``KG_SERVER_IDLE`` seconds (default 900; ``0`` stops it with
the last process, as before).

The watchdog decides under the wheel's inter-process lock, which every ``kg`` holds while it
attaches: a command that attaches either does so before the check (and counts as a holder)
or after the stop (and starts the server again itself); two servers on one folder cannot
happen. Activity is read from the wheel's handle list, rewritten on every attach and exit,
so a command that came and went between two checks still resets the clock. Handles of
killed processes are pruned at each check (:mod:`kg.host.handles`). ``kg server stop`` stops
the server at once; the watchdog then sees it gone and exits.

The watchdog also hosts the project's warm interpreter (:mod:`kg.host.resident_host`, unless
``KG_RESIDENT=0``): it waits on the host's socket instead of sleeping, and the commands it
runs count as activity while they run.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from kg.host.resident_host import CommandHost

IDLE_ENV = "KG_SERVER_IDLE"
DEFAULT_IDLE_SECONDS = 900.0
WATCHDOG_FILE = "kg-idle-watchdog.pid"
_POLL_SECONDS = 15.0
#: the watchdog process's entry module: the entry point that gives the resident host the
#: commands it runs. Started by name, so the local host never imports the CLI.
WATCHDOG_MODULE = "kg.cli.watchdog"


def idle_seconds() -> float:
    """``KG_SERVER_IDLE`` (seconds the server stays up after the last command), or the
    default; an unusable value falls back to the default rather than failing a command."""
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_IDLE_SECONDS
    except ValueError:
        return DEFAULT_IDLE_SECONDS
    return max(0.0, value)


def watchdog_pid(pgdata: Path) -> int | None:
    """The pid of the live watchdog of ``pgdata``, or None."""
    import psutil  # type: ignore[import-untyped]

    try:
        pid = int((pgdata / WATCHDOG_FILE).read_text(encoding="utf-8").split()[0])
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        command = " ".join(process.cmdline())
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    return pid if WATCHDOG_MODULE in command and str(pgdata) in command else None


def stop_watchdog(pgdata: Path) -> None:
    """End the watchdog of ``pgdata`` now (its server was stopped), rather than at its next
    check: its command host stops listening at once."""
    import signal

    pid = watchdog_pid(pgdata)
    if pid is not None and pid != os.getpid():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)


def ensure_watchdog(pgdata: Path, seconds: float) -> None:
    """Start the watchdog of ``pgdata`` unless one runs. Called by the last ``kg`` process
    to let go of the server; never raises (the worst case is a server left running, which
    ``kg server stop`` ends)."""
    if seconds <= 0 or watchdog_pid(pgdata) is not None:
        return
    with contextlib.suppress(OSError):
        subprocess.Popen(
            [sys.executable, "-m", WATCHDOG_MODULE, str(pgdata), str(seconds)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # not killed with the shell or the hook that ran kg
            close_fds=True,
        )


def _last_activity(pgdata: Path) -> float:
    from kg.host.handles import PIDS_FILE

    try:
        return (pgdata / PIDS_FILE).stat().st_mtime
    except OSError:
        return 0.0


def watch(
    pgdata: Path, seconds: float, poll: float = _POLL_SECONDS, host: CommandHost | None = None
) -> str:
    """Wait until the server on ``pgdata`` has had no holder for ``seconds``, then stop it.
    Meanwhile ``host``, if given, runs the commands sent to it. Returns why it ended:
    ``stopped``, ``gone`` (stopped by someone else), ``replaced`` (another watchdog took over)
    or ``stale`` (a command came from other kg code: the next watchdog hosts that)."""
    from kg.host.handles import prune_locked, server_lock
    from kg.host.postmaster import find_postmaster, stop_postmaster

    (pgdata / WATCHDOG_FILE).write_text(f"{os.getpid()}\n", encoding="utf-8")
    busy = time.time()
    while True:
        wait = max(0.05, min(poll, busy + seconds - time.time()))
        if host is not None:
            host.serve(wait)
            if host.stale:
                return "stale"
            if host.children:
                busy = time.time()
                continue
        else:
            time.sleep(wait)
        if watchdog_pid(pgdata) != os.getpid():
            return "replaced"
        found = find_postmaster(pgdata)
        if found is None:
            return "gone"
        with server_lock(pgdata):
            held = prune_locked(pgdata)
            busy = max(busy, _last_activity(pgdata))
            if held.live:
                busy = time.time()
                continue
            if time.time() - busy < seconds:
                continue
            stop_postmaster(pgdata, found[0])
            return "stopped"


def main(argv: list[str], make_host: Callable[[Path], CommandHost] | None = None) -> int:
    """The watchdog of ``argv`` = [pgdata, seconds]; ``make_host`` builds the resident
    command host for the project's state folder (none: the watchdog only stops the server)."""
    import signal

    pgdata = Path(argv[0])
    seconds = float(argv[1])
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(0))  # clean up, then exit
    from kg.host.resident import RESIDENT_ENV  # standard library only, like this module

    host = None
    if make_host is not None and os.environ.get(RESIDENT_ENV, "").strip() != "0":
        host = make_host(pgdata.parent)
        if not host.open():
            host = None
    try:
        watch(pgdata, seconds, host=host)
    finally:
        if host is not None:
            host.close()
        with contextlib.suppress(OSError, ValueError):
            if int((pgdata / WATCHDOG_FILE).read_text().split()[0]) == os.getpid():
                (pgdata / WATCHDOG_FILE).unlink()
    return 0
