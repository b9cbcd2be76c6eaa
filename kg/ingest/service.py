"""Application functions for spec ingestion: the CLI, the git hooks and the MCP tools
(``ingest_markdown``, ``lint_graph``) are thin shells over these.

Paths are absolute or relative to the project root (``rt.settings.project_root``), never to
the working directory, so an agent and a developer name files the same way.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from kg.events import EventMetadata
from kg.ingest import gitio
from kg.ingest.lint import find_dangling
from kg.ingest.model import ParseProblem
from kg.ingest.pipeline import Options, Pipeline
from kg.ingest.project import parse_project
from kg.ingest.report import IngestReport, SyncReport
from kg.ingest.schema_map import SCHEMA_FILES, load_schema_map
from kg.ingest.secrets import scan_files
from kg.ingest.state import holds_mark, log_mark, scoped
from kg.ingest.sync_state import Synced, last_synced, record_synced, state_key, sync_lock
from kg.ingest.targets import Targets, is_project_markdown, resolve_targets
from kg.runtime import Runtime


async def ingest_paths(
    rt: Runtime,
    paths: Sequence[Path | str] | None = None,
    *,
    force: bool = False,
    actor: str = "kg ingest",
    metadata: EventMetadata | None = None,
    workers: int = 0,
    allow_secrets: bool = False,
) -> IngestReport:
    """Ingest Markdown files and folders (default: the whole project) into the graph.

    Appends events only for what changed since the graph last saw each file: an unchanged
    file (same content, same schema map) is skipped without parsing; a removed file, section
    or renamed heading retires its nodes. ``force`` re-derives every file and re-asserts what
    the graph lacks (e.g. a link edge dropped when its target section was retired and has
    since come back). A file that cannot be read is reported in ``problems`` and keeps its
    earlier nodes; nothing else in the batch is lost.

    ``metadata`` (default: ``actor`` alone) goes with every event, plus the file it came from
    as ``source``; an MCP tool passes its session and tool call here. One correlation id ties
    the run's events together.

    A file holding what looks like a secret (:mod:`kg.ingest.secrets`) is refused and reported
    (``file:line``, the rule) unless allowlisted or ``allow_secrets``.

    Raises:
        ValidationError: the project's schema map is malformed.
        ConcurrencyConflictError: other writers kept changing the same files (after retries).
    """
    root = rt.settings.project_root
    targets = await asyncio.to_thread(resolve_targets, root, paths)
    meta = metadata or EventMetadata(actor=actor)
    return await _run(
        rt,
        targets,
        Options(force=force, metadata=meta, workers=workers, allow_secrets=allow_secrets),
    )


async def _run(rt: Runtime, targets: Targets, options: Options) -> IngestReport:
    start = time.perf_counter()
    schema = await asyncio.to_thread(load_schema_map, rt.settings.project_root)
    if options.metadata.correlation_id is None:
        meta = options.metadata.model_copy(update={"correlation_id": str(uuid.uuid4())})
        options = dataclasses.replace(options, metadata=meta)
    report = await Pipeline(rt, schema, targets, options).run()
    report.problems.sort(key=lambda p: (p.path, p.line, p.message))
    report.seconds = time.perf_counter() - start
    return report


async def sync_project(rt: Runtime, *, full: bool = False, actor: str = "kg sync") -> SyncReport:
    """Bring the graph up to the project's current git commit.

    Incremental when this database and scope were synced before: only the Markdown files that
    ``git diff --name-status <last synced commit> HEAD`` names are ingested (deleted ones
    retire their nodes). A full scan otherwise: no previous sync, the recorded commit is gone,
    the schema map changed, ``full=True``, or the project is not a git repository (then every
    run is a full scan, which skips unchanged files cheaply), or the database no longer holds
    the log the last sync ended at (reset, restored, replaced). The synced commit and that log
    mark are recorded in ``.kg/sync-state.json``; syncs of one project run one at a time.
    """
    root = rt.settings.project_root
    state_dir = rt.settings.state_dir
    key = state_key(rt.url, rt.scope)
    async with sync_lock(state_dir):
        head = await asyncio.to_thread(gitio.head_commit, root)
        synced = last_synced(state_dir, key)
        last = None if synced is None else synced.commit
        reason = await asyncio.to_thread(_full_scan_reason, root, head, last, full)
        if reason is None:
            assert synced is not None
            reason = await _unheld_reason(rt, synced)
        if reason is None:
            assert head is not None and last is not None
            if head == last:
                return SyncReport("up to date", last, head)
            changes = await asyncio.to_thread(gitio.changed_between, root, last, head)
            if any(c.path in SCHEMA_FILES for c in changes):
                reason = "the schema map changed"
        if reason is not None:
            report = await _run(
                rt, resolve_targets(root, None), Options(metadata=EventMetadata(actor=actor))
            )
            result = SyncReport("full", last, head, reason=reason, ingest=report)
        else:
            paths = sorted({c.path for c in changes if is_project_markdown(c.path)})
            targets = await asyncio.to_thread(resolve_targets, root, paths)
            report = await _run(
                rt, targets, Options(metadata=EventMetadata(actor=actor), report_missing=False)
            )
            result = SyncReport("incremental", last, head, paths=paths, ingest=report)
        if head is not None:
            async with scoped(rt.app_pool, rt.scope) as conn:
                mark = await log_mark(conn, rt.scope)
            record_synced(state_dir, key, head, mark)
        return result


async def _unheld_reason(rt: Runtime, synced: Synced) -> str | None:
    """Why the recorded sync cannot be trusted for this database, or None when it can: the
    database must still hold the event the sync ended at (a reset, a restore from before the
    sync, or another database behind the same URL does not)."""
    if not synced.has_mark:
        return "the sync state predates database checks"
    if synced.log is None:
        return None  # nothing was ingested then; an incremental sync misses nothing
    async with scoped(rt.app_pool, rt.scope) as conn:
        held = await holds_mark(conn, rt.scope, synced.log)
    if held:
        return None
    return (
        f"the database no longer holds the log synced at {synced.commit[:12]} (its event at "
        f"position {synced.log[0]} is gone or differs): it was reset, restored or replaced"
    )


def _full_scan_reason(root: Path, head: str | None, last: str | None, full: bool) -> str | None:
    if full:
        return "requested"
    if head is None:
        return "no commits yet" if gitio.is_repository(root) else "not a git repository"
    if last is None:
        return "first sync of this database and scope"
    if not gitio.commit_exists(root, last):
        return f"the last synced commit {last[:12]} is no longer in the repository"
    return None


async def lint_project(
    root: Path, paths: Sequence[Path | str] | None = None, *, workers: int = 1
) -> list[ParseProblem]:
    """Integrity problems of the project's Markdown, sorted by file and line.

    Every file is parsed (links are checked across the whole project), then only problems in
    ``paths`` (files or folders; default all) are returned: unreadable or refused files,
    malformed front matter, dangling links and anchors, duplicate ids, requirements defined
    twice, possible secrets (:mod:`kg.ingest.secrets`). Severity ``warning`` (an ambiguous
    wiki link) does not make the project fail lint.
    No database is used.

    Raises:
        ValidationError: the project's schema map is malformed.
    """
    return await asyncio.to_thread(lint_files, root, paths, workers=workers)


def lint_files(
    root: Path, paths: Sequence[Path | str] | None = None, *, workers: int = 1
) -> list[ParseProblem]:
    """:func:`lint_project` without the event loop."""
    schema = load_schema_map(root)
    docs = parse_project(root, schema=schema, workers=workers)
    problems = [p for doc in docs for p in doc.problems] + find_dangling(docs)
    problems += [f.problem() for f in scan_files(root, sorted({doc.path for doc in docs}))]
    if paths is not None:
        targets = resolve_targets(root, paths)
        wanted = set(targets.files) | set(targets.missing)
        problems = [
            p for p in problems if p.path in wanted or targets.covers_removed(p.path)
        ] + targets.problems
    return sorted(set(problems), key=lambda p: (p.path, p.line, p.message))
