"""``kg watch``: keep the graph in step with the working tree (:mod:`kg.ingest.watch`).

Runs in its own process (never in the resident host: it lives as long as the developer's
session), at low CPU priority, and prints one line per pass. ``--background`` detaches it
(:mod:`kg.host.watcher`): it then keeps the embedded server warm and stops with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from datetime import datetime

import typer

from kg.cli.common import console, stop_on_signals
from kg.cli.sync_command import print_problems

#: added to the process's niceness: saves are re-ingested when the machine has time
NICENESS = 10


def watch(
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="Print only passes that changed the graph, and problems."
    ),
    background: bool = typer.Option(
        False,
        "--background",
        help="Run detached, logging to .kg/watch.log; it keeps the embedded server warm and "
        "stops with it (`kg server stop`) or with `kg watch --stop`.",
    ),
    stop: bool = typer.Option(False, "--stop", help="Stop the background watcher."),
) -> None:
    """Keep the graph in step with the working tree: a saved, added or removed spec or source
    file is re-ingested within about a second, marked as working-tree state (a later sync
    of the commit records the committed one). Stops on Ctrl-C."""
    if background or stop:
        _background(start=background, stop=stop)
        return
    from kg.db.lost import quiet_driver_logs
    from kg.embeddings.factory import preload_in_background
    from kg.errors import KgError
    from kg.host.database import open_runtime
    from kg.ingest.watch import watch_project
    from kg.ingest.worktree import WorktreeReport

    quiet_driver_logs()
    with contextlib.suppress(OSError):
        os.nice(NICENESS)
    preload_in_background()

    def on_pass(report: WorktreeReport) -> None:
        changed = report.ingest is not None and report.ingest.events > 0
        if quiet and not changed and not report.all_problems:
            return
        stamp = datetime.now().strftime("%H:%M:%S")
        console.print(f"{stamp} {report.summary()}", markup=False)
        print_problems(report.all_problems)

    def on_error(error: KgError) -> None:
        console.print(f"[bold red]error:[/] {error}", highlight=False)

    async def go() -> None:
        stop = stop_on_signals()
        async with open_runtime() as rt:
            console.print(f"watching {rt.settings.project_root} (Ctrl-C stops)", markup=False)
            await watch_project(rt, stop=stop, on_pass=on_pass, on_error=on_error)

    try:
        asyncio.run(go())
    except Exception as exc:  # a lost database ends the watch with one clear line
        from kg.db.lost import as_unavailable

        error = exc if isinstance(exc, KgError) else as_unavailable(exc)
        if error is None:
            raise
        on_error(error)
        raise typer.Exit(1) from None


def _background(*, start: bool, stop: bool) -> None:
    """``--background`` / ``--stop``: the detached watcher of :mod:`kg.host.watcher`."""
    from kg.cli.common import fail
    from kg.config import Settings
    from kg.errors import KgError
    from kg.host.watcher import start_watcher, stop_watcher

    if start and stop:
        fail("--background and --stop contradict each other: give one")
    settings = Settings.from_env()
    state_dir = settings.state_dir
    if stop:
        stopped = stop_watcher(state_dir)
        message = f"stopped kg watch (pid {stopped.pid})" if stopped else "no kg watch was running"
        console.print(message, markup=False)
        return
    if not state_dir.is_dir():
        fail(f"{settings.project_root} is not a kg project (no {state_dir}): run `kg init` first")
    try:
        watcher, started = start_watcher(state_dir, settings.project_root, dict(os.environ))
    except KgError as exc:
        fail(str(exc))
        return
    verb = "watching" if started else "already watching"
    console.print(
        f"{verb} {settings.project_root} in the background (pid {watcher.pid}, log "
        f"{watcher.log}); `kg watch --stop` or `kg server stop` stops it",
        markup=False,
    )
