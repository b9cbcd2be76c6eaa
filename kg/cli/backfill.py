"""``kg backfill PATH... [--dry-run]``: import legacy decision tables (org.db, sessions.db)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kg.cli.common import console, run
from kg.progress import ROWS_IMPORTED

if TYPE_CHECKING:
    from backfill.report import BackfillReport

MAX_CHUNK = 20_000
"""``backfill.importer.MAX_CHUNK``, repeated so that ``kg`` does not import the importer to
build its option list (a test keeps the two equal)."""


def _progress(table: str, rows: int) -> None:
    # Plain, flushed lines on stderr: an operator (or a test) can follow a long run live.
    sys.stderr.write(f"committed {table}: {rows} rows\n")
    sys.stderr.flush()


def _write_report(path: Path, report: BackfillReport) -> None:
    with path.open("w", encoding="utf-8") as out:
        for kind, issues in (("rejected", report.rejected), ("warning", report.warnings)):
            for issue in issues:
                out.write(
                    json.dumps({"kind": kind, "where": issue.where, "reason": issue.reason}) + "\n"
                )


def backfill(
    paths: list[Path] = typer.Argument(..., help="Legacy SQLite files: org.db and/or sessions.db."),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Read and check everything, count what would be imported, write nothing.",
    ),
    chunk_size: int = typer.Option(
        5000, min=1, max=MAX_CHUNK, help="Rows per append (one transaction each)."
    ),
    actor: str = typer.Option(
        "kg backfill", help="Actor recorded on events whose legacy row names no author."
    ),
    report: Path = typer.Option(
        None, "--report", help="Write every rejected row and warning to FILE (JSON Lines)."
    ),
    show: int = typer.Option(100, min=0, help="Rejected rows and warnings listed on screen."),
    pause: float = typer.Option(
        0.0, min=0.0, help="Seconds to wait after each committed chunk (spares a busy database)."
    ),
    catch_up: bool = typer.Option(
        True, "--catch-up/--no-catch-up", help="Bring the projections up to date afterwards."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON."),
) -> None:
    """Turn legacy rows into the domain events the live system writes, with provenance
    (source: org.db/decisions#42). Idempotent and resumable: a rerun imports only what is
    missing. Every row that cannot be imported is reported with the reason."""
    from backfill.importer import BackfillOptions, run_backfill
    from kg.cli.progress import shown
    from kg.host.database import open_runtime

    async def go() -> tuple[BackfillReport, str | None]:
        with shown("backfill") as progress:
            committed: dict[str, int] = {}

            def note_rows(table: str, rows: int) -> None:
                _progress(table, rows)
                progress.add(ROWS_IMPORTED, rows - committed.get(table, 0))
                committed[table] = rows

            options = BackfillOptions(
                dry_run=dry_run,
                chunk_size=chunk_size,
                actor=actor,
                pause=pause,
                progress=None if dry_run else note_rows,
            )
            async with open_runtime() as rt:
                result = await run_backfill(rt.store, rt.scope, paths, options)
                note = None
                if catch_up and not dry_run:
                    start = time.perf_counter()
                    rt.runner.ctx.progress = progress
                    applied = await rt.catch_up()
                    took = time.perf_counter() - start
                    note = f"projections caught up: {applied} events in {took:.1f} s"
        return result, note

    result, note = run(go)
    if report is not None:
        _write_report(report, result)
    if as_json:
        console.print_json(json.dumps(result.to_dict()))
        return
    for line in result.lines(max_listed=show):
        console.print(line, markup=False)
    if note:
        console.print(note)
    if report is not None:
        console.print(f"report of every rejected row and warning: {report}", markup=False)
