"""``kg sync``, without Typer: a developer (or the post-commit hook) runs it after each commit,
so its start-up is kept to what a sync needs. :mod:`kg.cli.main` calls :func:`main` for the
plain ``kg sync [--full]``; the Typer command (help, ``--as-of``) calls :func:`sync`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from kg.cli.consoles import console, err_console
from kg.errors import KgError
from kg.ingest.model import ParseProblem
from kg.ingest.report import SyncReport


def print_problems(problems: Sequence[ParseProblem]) -> None:
    """``file:line: message`` on stderr (``warning:`` before the message for warnings)."""
    for p in problems:
        prefix = "" if p.severity == "error" else "warning: "
        err_console.print(f"{p.path}:{p.line}: {prefix}{p.message}", markup=False)


def sync(full: bool) -> int:
    """Run the sync, print its summary and problems; the exit code (1: failed files)."""
    from kg.embeddings.factory import preload_in_background

    preload_in_background()  # numpy loads while the database and git are being asked

    async def go() -> SyncReport:
        from kg.ingest.service import sync_project
        from kg.runtime import open_runtime

        async with open_runtime() as rt:
            return await sync_project(rt, full=full)

    report = asyncio.run(go())
    console.print(f"sync: {report.summary()}", markup=False)
    if report.ingest is not None:
        print_problems(report.ingest.problems)
        if report.ingest.failed:
            return 1
    return 0


def main(full: bool) -> int:
    """:func:`sync` with a :class:`KgError` as ``error: ...`` on stderr and exit code 1, as
    every ``kg`` command does."""
    try:
        return sync(full)
    except KgError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        return 1
