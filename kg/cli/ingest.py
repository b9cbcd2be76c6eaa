"""``kg ingest PATH...``, ``kg sync`` and ``kg lint``: specs into the graph, and their integrity.

Paths on the command line are relative to the working directory (as in any shell command);
the application functions take them relative to the project root, so they are made absolute
here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kg.cli.common import console, err_console, run
from kg.cli.sync_command import print_problems, print_skipped, print_warnings
from kg.ingest.files import DEFAULT_MAX_BYTES
from kg.ingest.report import IngestReport
from kg.parsed.model import ParseProblem

if TYPE_CHECKING:
    from kg.ingest.parts import IngestParts


def _absolute(paths: Sequence[Path] | None) -> list[Path] | None:
    if not paths:
        return None
    return [p if p.is_absolute() else Path.cwd() / p for p in paths]


def print_ingest(report: IngestReport) -> None:
    console.print(f"ingested {report.summary()}", markup=False)
    console.print(
        f"nodes: {report.nodes_asserted} asserted, {report.nodes_retired} retired; "
        f"edges: {report.edges_asserted} asserted, {report.edges_retracted} retracted"
    )
    console.print(
        f"projections caught up: {report.projected} events applied, "
        f"{report.embedded} texts embedded ({report.seconds:.2f} s)"
    )
    print_problems(report.problems)
    print_skipped(report)
    print_warnings(report.warnings)


def ingest(
    paths: list[Path] = typer.Argument(
        ...,
        help="Markdown or source files, or folders (every Markdown and source file under them).",
    ),
    force: bool = typer.Option(
        False, "--force", help="Re-derive every file, even those whose content is unchanged."
    ),
    workers: int = typer.Option(0, help="Parsing processes (0: one per CPU, at most 4)."),
    max_file_bytes: int = typer.Option(
        DEFAULT_MAX_BYTES,
        "--max-file-bytes",
        min=1,
        help="Skip (with a warning) files larger than this.",
    ),
    allow_secrets: bool = typer.Option(
        False,
        "--allow-secrets",
        help="Ingest files that hold what looks like a secret instead of refusing them "
        "(narrower: '# kg:allow-secret' on the line, or .kg-secrets-allow).",
    ),
    background: bool = typer.Option(
        False,
        "--background",
        help="Return once the graph is ready: a detached process embeds the texts for vector "
        "search (log in .kg/embed.log; `kg status` counts the nodes that still wait).",
    ),
) -> None:
    """Parse Markdown specs and source code into the graph, appending events only for what
    changed.

    The project's policy files (.kg/policies/*.yaml) are applied first, changes only.
    Folders are scanned without what git ignores and what the project's .kgignore lists.
    Files too large, binary or not UTF-8 are skipped with a warning (exit code 0). A file
    holding a possible secret (private key, cloud or API token, high-entropy value assigned
    to a secret-looking name) is replaced by a marker before ingesting, with a warning:
    file:line and the rule, never the secret.

    Graph first, vectors after: the graph, full text and anchors are usable as soon as the
    files are ingested ("graph ready"); then the texts for vector search are embedded with a
    progress display (Ctrl-C keeps what was done; the next ingest or sync resumes), or by a
    detached process with --background.
    """
    from kg.cli.progress import shown
    from kg.events import EventMetadata
    from kg.governance.enforce import cli_actor
    from kg.governance.sync import PolicySync, apply_policy_files
    from kg.host.database import open_runtime
    from kg.ingest.service import ingest_paths

    async def go() -> tuple[PolicySync, IngestReport, bool]:
        async with open_runtime() as rt:
            with shown("ingest") as progress:
                policies = await apply_policy_files(rt, EventMetadata(actor="kg ingest"))
                report = await ingest_paths(
                    rt,
                    _absolute(paths),
                    force=force,
                    workers=workers,
                    acting=cli_actor(),
                    max_bytes=max_file_bytes,
                    progress=progress,
                    allow_secrets=allow_secrets,
                    vectors_after=True,
                )
            if background:
                await _embed_in_background(rt, report, _absolute(paths) or [])
                return policies, report, True
            finished = await _embed_after(rt, report)
            return policies, report, finished

    policies, report, finished = run(go)
    if policies.files or policies.events:
        console.print(policies.summary(), markup=False)
    print_ingest(report)
    if not finished:
        raise typer.Exit(130)
    if report.failed or report.rejected:
        raise typer.Exit(1)


async def _embed_in_background(rt: IngestParts, report: IngestReport, paths: list[Path]) -> None:
    """Hand what waits for a vector to a detached ``kg ingest`` of the same paths (nothing
    left to append: it embeds), or leave it to the one already running."""
    import os

    from kg.config import ensure_state_dir
    from kg.host.background_embed import start_embedder

    if not report.waiting_embeddings:
        return
    state_dir = ensure_state_dir(rt.settings.state_dir)
    found, started = start_embedder(
        state_dir, rt.settings.project_root, dict(os.environ), [str(p) for p in paths]
    )
    where = "started" if started else "already running"
    err_console.print(
        f"graph ready ({report.nodes_asserted} nodes) in {report.seconds:.1f} s; "
        f"{report.waiting_embeddings} node(s) wait for a vector: the background embedding "
        f"({where}, pid {found.pid}, log {found.log}) embeds them; `kg status` counts what "
        "still waits",
        markup=False,
        highlight=False,
    )


ANNOUNCE_TEXTS = 100
"""From this many texts to embed (a few seconds of MiniLM on two cores), ``kg ingest`` says
that the graph is ready before it embeds them."""


async def _embed_after(rt: IngestParts, report: IngestReport) -> bool:
    """Graph first, vectors after: say that the graph is usable, then embed what waits with
    a progress display. Ctrl-C stops the embedding (False): the graph stays usable and the
    nodes without a vector wait for the next ``kg ingest`` or ``kg sync``."""
    from kg.cli.progress import shown
    from kg.ingest.service import embed_backlog
    from kg.projections.embedding_backlog import texts_waiting

    if not report.waiting_embeddings:
        return True
    async with rt.system_pool.acquire() as conn:
        texts = await texts_waiting(conn, rt.scope)
    if texts >= ANNOUNCE_TEXTS:
        err_console.print(
            f"graph ready ({report.nodes_asserted} nodes) in {report.seconds:.1f} s: full "
            f"text, anchors and browsing work now; embedding {texts} texts for vector search "
            "(Ctrl-C stops, the next `kg ingest` or `kg sync` resumes) ...",
            markup=False,
            highlight=False,
        )
    start, embedded = time.perf_counter(), rt.runner.ctx.embedded
    try:
        with shown("embed") as progress:
            await embed_backlog(rt, report, progress=progress)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # the command goes on: it closes the runtime and reports
        report.embedded += rt.runner.ctx.embedded - embedded
        report.seconds += time.perf_counter() - start
        report.warnings.append(
            "interrupted while embedding: the graph and its full text are complete; nodes "
            "without a vector wait (`kg status` counts them, a semantic build says how many) "
            "and the next `kg ingest` or `kg sync` embeds them"
        )
        return False
    report.seconds += time.perf_counter() - start
    return True


def sync(
    full: bool = typer.Option(False, "--full", help="Scan every file, not only changed ones."),
    worktree: bool = typer.Option(
        False,
        "--worktree",
        help="Also ingest the working tree's uncommitted changes (edited, added, removed "
        "files), once: `kg watch` keeps doing it.",
    ),
    max_file_bytes: int = typer.Option(
        DEFAULT_MAX_BYTES,
        "--max-file-bytes",
        min=1,
        help="Skip (with a warning) files larger than this.",
    ),
) -> None:
    """Bring the graph up to the current git commit.

    Only the Markdown and source files changed since the last synced commit are ingested
    (found with git diff); a full scan the first time, or outside git. With --worktree, the
    files that differ from that commit too, marked as working-tree state.
    """
    from kg.cli.sync_command import main

    if worktree and full:
        raise typer.BadParameter("--worktree and --full do not go together: run them one by one")
    # The same code as the plain `kg sync`, which kg.cli.main runs without Typer.
    code = main(full, max_file_bytes, worktree=worktree)
    if code:
        raise typer.Exit(code)


def lint(
    paths: list[Path] = typer.Argument(
        None,
        help="Only report problems in these files or folders (links are still checked "
        "against the whole project).",
    ),
    staged: bool = typer.Option(
        False, "--staged", help="Lint what the next commit would record (the git index)."
    ),
    workers: int = typer.Option(1, help="Parsing processes."),
) -> None:
    """Check the Markdown specs' integrity; exit code 1 on any error.

    Dangling links and anchors, duplicate ids, malformed front matter, unreadable files: one
    line each, as file:line: message.
    """
    from kg.config import Settings
    from kg.errors import KgError
    from kg.ingest.service import lint_project
    from kg.ingest.staged import lint_staged

    root = Settings.from_env().project_root

    async def go() -> list[ParseProblem]:
        if staged:
            return await asyncio.to_thread(lint_staged, root)
        return await lint_project(root, _absolute(paths), workers=workers)

    try:
        problems = asyncio.run(go())
    except KgError as error:
        err_console.print(f"[bold red]error:[/] {error}")
        raise typer.Exit(2) from None
    for p in problems:
        prefix = "" if p.severity == "error" else "warning: "
        console.print(f"{p.path}:{p.line}: {prefix}{p.message}", markup=False)
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    files = len({p.path for p in problems})
    if problems:
        err_console.print(f"{errors} errors, {warnings} warnings in {files} files")
    else:
        err_console.print("no problems found")
    if errors:
        raise typer.Exit(1)
