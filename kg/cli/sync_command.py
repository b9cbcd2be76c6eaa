"""``kg sync``, without Typer: a developer (or the post-commit hook) runs it after each commit,
so its start-up is kept to what a sync needs. :mod:`kg.cli.main` calls :func:`main` for the
plain ``kg sync [--full]``; the Typer command (help, ``--as-of``) calls :func:`sync`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from kg.errors import KgError
from kg.ingest.files import DEFAULT_MAX_BYTES
from kg.ingest.report import IngestReport, SyncReport
from kg.parsed.model import ParseProblem


def print_problems(problems: Sequence[ParseProblem]) -> None:
    """``file:line: message`` on stderr (``warning:`` before the message for warnings).

    Plain text, so printed without rich (importing it costs a sync ~0.05 s).
    """
    for p in problems:
        prefix = "" if p.severity == "error" else "warning: "
        print(f"{p.path}:{p.line}: {prefix}{p.message}", file=sys.stderr)


def print_skipped(report: IngestReport) -> None:
    """One line after the warnings when files were skipped, saying what to do about them."""
    if report.unreadable:
        print(
            f"skipped {len(report.unreadable)} files (too large, binary or not UTF-8; see the "
            "warnings): --max-file-bytes raises the size limit, a .kgignore entry leaves a "
            "file out without a warning",
            file=sys.stderr,
        )


def print_warnings(warnings: Sequence[str]) -> None:
    """``warning: ...`` on stderr: what degraded without failing (an embedder outage)."""
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)


def sync(full: bool, max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """Run the sync, print its summary and problems; the exit code (1: failed files)."""
    from kg.cli.progress import shown
    from kg.embeddings.factory import preload_in_background
    from kg.host.database import open_runtime
    from kg.ingest.service import sync_project

    # numpy loads while the database and git are being asked; started only now, after this
    # thread's own imports, with which it would merely share the interpreter (~0.1 s lost).
    preload_in_background()

    async def go() -> SyncReport:
        with shown("sync") as progress:
            async with open_runtime() as rt:
                return await sync_project(rt, full=full, max_bytes=max_bytes, progress=progress)

    report = asyncio.run(go())
    print(f"sync: {report.summary()}", flush=True)
    print_warnings(report.all_warnings)
    if report.ingest is not None:
        print_problems(report.ingest.problems)
        print_skipped(report.ingest)
        if report.ingest.failed:
            return 1
    return 0


def sync_worktree(max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """``kg sync --worktree``: one working-tree pass (:mod:`kg.ingest.worktree`)."""
    from kg.cli.progress import shown
    from kg.embeddings.factory import preload_in_background
    from kg.host.database import open_runtime
    from kg.ingest.worktree import WorktreeReport
    from kg.ingest.worktree import sync_worktree as run_pass

    preload_in_background()

    async def go() -> WorktreeReport:
        with shown("sync") as progress:
            async with open_runtime() as rt:
                return await run_pass(rt, max_bytes=max_bytes, progress=progress)

    report = asyncio.run(go())
    print(f"sync: {report.summary()}", flush=True)
    print_problems(report.all_problems)
    for part in (report.committed.ingest if report.committed else None, report.ingest):
        if part is not None:
            print_skipped(part)
            print_warnings(part.warnings)
    failed = any(
        part is not None and part.failed
        for part in (report.committed.ingest if report.committed else None, report.ingest)
    )
    return 1 if failed else 0


def main(full: bool, max_bytes: int = DEFAULT_MAX_BYTES, *, worktree: bool = False) -> int:
    """:func:`sync` with a :class:`KgError` as ``error: ...`` on stderr and exit code 1, as
    every ``kg`` command does."""
    from kg.db.lost import quiet_driver_logs

    quiet_driver_logs()
    try:
        return sync_worktree(max_bytes) if worktree else sync(full, max_bytes)
    except Exception as exc:
        from kg.db.lost import as_unavailable

        error = exc if isinstance(exc, KgError) else as_unavailable(exc)
        if error is None:
            raise
        from rich.markup import escape

        from kg.cli.consoles import err_console

        err_console.print(f"[bold red]error:[/] {escape(str(error))}")
        return 1
