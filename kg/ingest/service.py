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

from kg.directives.conflicts import find_conflicts
from kg.events import EventMetadata
from kg.ingest import gitio
from kg.ingest.files import DEFAULT_MAX_BYTES
from kg.ingest.lint import find_dangling
from kg.ingest.parts import IngestParts
from kg.ingest.pipeline import Notify, Options, Pipeline
from kg.ingest.project import parse_project
from kg.ingest.report import IngestReport, SyncReport
from kg.ingest.schema_map import SCHEMA_FILES, load_schema_map
from kg.ingest.secrets import scan_files
from kg.ingest.state import holds_mark, log_mark, scoped
from kg.ingest.sync_state import Synced, last_synced, record_synced, state_key, sync_lock
from kg.ingest.targets import Targets, is_project_file, resolve_targets
from kg.ingest.walker import drop_ignored, walk_files
from kg.languages import SOURCE_SUFFIXES
from kg.parsed.model import ParseProblem, document_id
from kg.progress import NO_PROGRESS, TEXTS_EMBEDDED, Progress
from kg.projections.embedding_backlog import Backlog, count_waiting, embed_waiting, texts_waiting


async def ingest_paths(
    rt: IngestParts,
    paths: Sequence[Path | str] | None = None,
    *,
    force: bool = False,
    actor: str = "kg ingest",
    metadata: EventMetadata | None = None,
    workers: int = 0,
    acting: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = NO_PROGRESS,
    notify: Notify | None = None,
    allow_secrets: bool = False,
    vectors_after: bool = False,
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
    the run's events together. ``acting`` (default: the metadata's actor) is who policies
    must allow to ingest the files (``kg.governance.enforce``).

    A file over ``max_bytes``, binary or not UTF-8 is skipped with a warning (``unreadable``);
    folders are scanned without what git or the project's ``.kgignore`` ignore
    (:mod:`kg.ingest.walker`). ``progress`` counts files, events and embeddings as they go;
    ``notify`` is awaited with (files written, files to write) after each chunk of changed
    files (an MCP tool's progress notifications).

    What looks like a secret (:mod:`kg.ingest.secrets`) is replaced by a marker before
    anything is appended and reported as a warning (``file:line``, the rule) unless
    allowlisted or ``allow_secrets``.

    ``vectors_after`` returns as soon as the graph and its full text are usable: the nodes are
    projected with the vectors the embedding cache already holds, and the others wait for
    theirs (``report.waiting_embeddings``); :func:`embed_backlog` embeds them. Embedding is
    most of a large ingest's time with a local model (bench/RESULTS.md, issue 34), and a
    semantic build meanwhile says how many nodes wait. Otherwise the vectors are computed
    while projecting, and the call returns with everything embedded (or waiting for an
    embedder that is unavailable, with a warning).

    Raises:
        ValidationError: the project's schema map is malformed.
        ConcurrencyConflictError: other writers kept changing the same files (after retries).
        ActionRefusedError: a policy does not let ``acting`` ingest these files.
    """
    root = rt.settings.project_root
    targets = await asyncio.to_thread(resolve_targets, root, paths)
    meta = metadata or EventMetadata(actor=actor)
    await _require_ingest(rt, acting or meta.actor, targets, meta)
    options = Options(
        force=force,
        metadata=meta,
        workers=workers,
        max_bytes=max_bytes,
        progress=progress,
        notify=notify,
        allow_secrets=allow_secrets,
    )
    return await _run(rt, targets, options, vectors_after=vectors_after)


async def _require_ingest(
    rt: IngestParts, actor: str, targets: Targets, metadata: EventMetadata
) -> None:
    """Policies must let ``actor`` ingest (``ingest_markdown``) every file it would touch."""
    from kg.governance.enforce import require  # the graph side loads with the first read

    files = [*targets.files, *targets.missing]
    await require(rt, actor, "ingest_markdown", [document_id(f) for f in files], metadata)


async def _run(
    rt: IngestParts, targets: Targets, options: Options, *, vectors_after: bool = False
) -> IngestReport:
    start = time.perf_counter()
    schema = await asyncio.to_thread(load_schema_map, rt.settings.project_root)
    if options.metadata.correlation_id is None:
        meta = options.metadata.model_copy(update={"correlation_id": str(uuid.uuid4())})
        options = dataclasses.replace(options, metadata=meta)
    ctx = rt.runner.ctx
    shown, ctx.progress = ctx.progress, options.progress
    deferred, ctx.defer_embedding = ctx.defer_embedding, vectors_after
    try:
        report = await Pipeline(rt, schema, targets, options).run()
        if vectors_after:
            async with rt.system_pool.acquire() as conn:
                report.waiting_embeddings = await count_waiting(conn, rt.scope)
        else:
            await _embed_waiting(rt, report)
    finally:
        ctx.progress = shown
        ctx.defer_embedding = deferred
    report.problems.sort(key=lambda p: (p.path, p.line, p.message))
    report.seconds = time.perf_counter() - start
    return report


async def embed_backlog(
    rt: IngestParts, report: IngestReport | None = None, *, progress: Progress = NO_PROGRESS
) -> Backlog:
    """Embed the project's nodes that wait for a vector (after :func:`ingest_paths` with
    ``vectors_after``, or an outage), counting the texts on ``progress`` (its total: the
    distinct texts the projected rows lack). Each chunk's vectors are committed as they come:
    an interrupted run (Ctrl-C) keeps them, and the next ingest, sync or this call resumes
    from what still waits. ``report`` (if given) gains the count and any warning."""
    async with rt.system_pool.acquire() as conn:
        texts = await texts_waiting(conn, rt.scope)
    ctx = rt.runner.ctx
    shown, ctx.progress = ctx.progress, progress
    if texts:
        progress.total(TEXTS_EMBEDDED, texts)
    try:
        backlog = await embed_waiting(rt.system_pool, ctx, rt.scope)
    finally:
        ctx.progress = shown
    if report is not None:
        report.embedded += backlog.embedded
        report.waiting_embeddings = backlog.waiting
        if (warning := backlog.warning()) is not None:
            report.warnings.append(warning)
    return backlog


async def _embed_waiting(rt: IngestParts, report: IngestReport | SyncReport) -> None:
    """Embed the nodes that wait for a vector (projected while the embedder was unavailable),
    now or at the next run: an outage degrades an ingest to a warning, never a failure."""
    backlog = await embed_waiting(rt.system_pool, rt.runner.ctx, rt.scope)
    warning = backlog.warning()
    if isinstance(report, IngestReport):
        report.embedded += backlog.embedded
        report.waiting_embeddings = backlog.waiting
    if warning:
        report.warnings.append(warning)


async def sync_project(
    rt: IngestParts,
    *,
    full: bool = False,
    actor: str = "kg sync",
    acting: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = NO_PROGRESS,
) -> SyncReport:
    """Bring the graph up to the project's current git commit.

    Incremental when this database and scope were synced before: only the Markdown files that
    ``git diff --name-status <last synced commit> HEAD`` names are ingested (deleted ones
    retire their nodes). A full scan otherwise: no previous sync, the recorded commit is gone,
    the schema map changed, ``full=True``, or the project is not a git repository (then every
    run is a full scan, which skips unchanged files cheaply), or the database no longer holds
    the log the last sync ended at (reset, restored, replaced). The synced commit and that log
    mark are recorded in ``.kg/sync-state.json``; syncs of one project run one at a time.

    The project's policy files are applied first (:mod:`kg.governance.sync`: only changes are
    appended); while one has an error the sync raises :class:`~kg.errors.PolicyFilesError`
    and ingests nothing (fail closed). ``acting`` (default: the CLI user,
    :func:`~kg.governance.enforce.cli_actor`) is who policies must allow to ingest the changed
    files; a refusal writes nothing and records no sync, so the next sync tries the same
    commits again. Files git or
    ``.kgignore`` ignore are left out, as in :func:`ingest_paths`.
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
                result = SyncReport("up to date", last, head)
                await _embed_waiting(rt, result)
                return result
            changes = await asyncio.to_thread(gitio.changed_between, root, last, head)
            if any(c.path in SCHEMA_FILES for c in changes):
                reason = "the schema map changed"
        from kg.governance.enforce import cli_actor
        from kg.governance.sync import apply_policy_files

        meta = EventMetadata(actor=actor)
        # Before anything is ingested: a broken policy file fails the sync (fail closed). An
        # up-to-date sync ingests nothing and keeps its fast path (no YAML to import).
        policies = await apply_policy_files(rt, meta)
        who = acting or cli_actor()
        if reason is not None:
            targets = await asyncio.to_thread(resolve_targets, root, None)
            await _require_ingest(rt, who, targets, meta)
            options = Options(metadata=meta, max_bytes=max_bytes, progress=progress)
            report = await _run(rt, targets, options)
            result = SyncReport("full", last, head, reason=reason, ingest=report)
        else:
            named = sorted({c.path for c in changes if is_project_file(c.path)})
            paths = await asyncio.to_thread(drop_ignored, root, named)
            targets = await asyncio.to_thread(resolve_targets, root, paths)
            await _require_ingest(rt, who, targets, meta)
            options = Options(
                metadata=meta, report_missing=False, max_bytes=max_bytes, progress=progress
            )
            report = await _run(rt, targets, options)
            result = SyncReport("incremental", last, head, paths=paths, ingest=report)
        result.policies = policies.summary() if policies.files or policies.events else ""
        if head is not None:
            async with scoped(rt.app_pool, rt.scope) as conn:
                mark = await log_mark(conn, rt.scope)
            record_synced(state_dir, key, head, mark)
        return result


async def _unheld_reason(rt: IngestParts, synced: Synced) -> str | None:
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
    twice, conflicting directives of rule files, possible secrets (:mod:`kg.ingest.secrets`).
    Severity ``warning`` (an ambiguous wiki link) does not make the project fail lint. No
    database is used.

    Raises:
        ValidationError: the project's schema map is malformed.
    """
    return await asyncio.to_thread(lint_files, root, paths, workers=workers)


def lint_files(
    root: Path, paths: Sequence[Path | str] | None = None, *, workers: int = 1
) -> list[ParseProblem]:
    """:func:`lint_project` without the event loop."""
    from kg.governance.files import load_policy_files, policy_folder
    from kg.governance.lint import lint_policy_files

    schema = load_schema_map(root)
    docs = parse_project(root, schema=schema, workers=workers)
    sources = walk_files(root, suffixes=SOURCE_SUFFIXES)
    problems = [p for doc in docs for p in doc.problems] + find_dangling(docs, sources)
    problems += [f.problem() for f in scan_files(root, sorted({doc.path for doc in docs}))]
    policies = lint_policy_files(load_policy_files(root), docs)
    problems += find_conflicts(docs)  # rule files: MUST and MUST NOT on the same subject
    if paths is not None:
        folder = policy_folder(root)
        if any(_covers_policy_files(root, p, folder) for p in paths):
            problems += policies
        targets = resolve_targets(
            root, [p for p in paths if not _names_policy_files(root, p, folder)]
        )
        wanted = set(targets.files) | set(targets.missing) | {p.path for p in policies}
        problems = [
            p for p in problems if p.path in wanted or targets.covers_removed(p.path)
        ] + targets.problems
    else:
        problems += policies
    return sorted(set(problems), key=lambda p: (p.path, p.line, p.message))


def _covers_policy_files(root: Path, path: Path | str, folder: str) -> bool:
    """Whether a lint argument is the policy folder, a file in it, or a folder above it."""
    from kg.governance.files import is_policy_file

    rel = _project_relative(root, path)
    if rel is None:
        return False
    return rel in (".", "", folder) or folder.startswith(rel + "/") or is_policy_file(rel, folder)


def _project_relative(root: Path, path: Path | str) -> str | None:
    full = Path(path) if Path(path).is_absolute() else root / path
    try:
        return full.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def _names_policy_files(root: Path, path: Path | str, folder: str) -> bool:
    """Whether a lint argument is the policy folder or a file in it (not Markdown: linted by
    :mod:`kg.governance.lint`, not resolved as a spec)."""
    from kg.governance.files import is_policy_file

    rel = _project_relative(root, path)
    return rel is not None and (rel == folder or is_policy_file(rel, folder))
