"""``kg watch``: keep the graph in step with the working tree (:mod:`kg.ingest.watch`).

Runs in its own process (never in the resident host: it lives as long as the developer's
session), at low CPU priority, and prints one line per pass.
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
) -> None:
    """Keep the graph in step with the working tree: a saved, added or removed spec or source
    file is re-ingested within about a second, marked as working-tree state (a later sync
    of the commit records the committed one). Stops on Ctrl-C."""
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
