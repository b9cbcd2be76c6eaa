"""The ingest pipeline: read, skip what is unchanged, parse, diff against the graph, append.

1. Every target file is read and hashed; one batched lookup of the document nodes'
   fingerprints tells which files changed (an unchanged file is never parsed).
2. Changed files are parsed in chunks (in worker processes for large batches; the next chunk
   is parsed while the current one is written).
3. Each chunk is compared with what the graph holds for those files (a few batched queries,
   :mod:`kg.ingest.state`) and the differences are appended, one stream per file, many files
   per transaction (:func:`kg.events.multi.append_multi`) with each stream's expected version.
   Events of one transaction are grouped by kind, so the projections apply long runs.
4. The projections catch up (embedding new content), then requirement nodes that no file
   mentions any more are retired.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic

from kg.errors import ConcurrencyConflictError
from kg.events import EventMetadata, NodeRetired, PendingEvent
from kg.events.multi import StreamEvent, append_multi
from kg.events.store import MAX_BATCH
from kg.ingest import bulk, state
from kg.ingest.code import state as code_state
from kg.ingest.code.history import History, read_history
from kg.ingest.code.mentions import CodeNames, named_in
from kg.ingest.code.stage import CodeRun, CodeStage, Reader, code_fingerprint_salt
from kg.ingest.diff import (
    FileChange,
    ProjectedFile,
    diff_file,
    file_fingerprint,
    mentioned_entities,
    requirement_ids,
    schema_fingerprint,
    stream_id,
)
from kg.ingest.entities.relations import RelationLedger
from kg.ingest.files import DEFAULT_MAX_BYTES, read_markdown_file
from kg.ingest.links import WikiIndex
from kg.ingest.parts import IngestParts
from kg.ingest.project import discover_markdown, parse_texts, parsing_pool
from kg.ingest.provenance import Provenance, worktree_fingerprint
from kg.ingest.report import IngestReport
from kg.ingest.requirements import RequirementIndex
from kg.ingest.schema_map import SchemaMap
from kg.ingest.secrets import Allowlist, mask_text
from kg.ingest.supersede import link_edits
from kg.ingest.targets import Targets
from kg.ingest.tenure import Tenure
from kg.languages import is_source, language_of, path_skip_reason
from kg.parsed.model import ParsedDocument, ParseProblem, document_id
from kg.progress import EVENTS_APPENDED, FILES_PARSED, FILES_READ, NO_PROGRESS, Progress

CHUNK_FILES = 256
#: A run of fewer than ``PIPELINE_CHUNKS * CHUNK_FILES`` changed files is still cut into that
#: many chunks (of at least MIN_CHUNK_FILES files): see :func:`_chunks`.
PIPELINE_CHUNKS = 4
MIN_CHUNK_FILES = 32
CODE_POOL_MIN_FILES = 200
TXN_EVENTS = 20_000
POOL_MIN_FILES = 400
_RETRIES = 3
# Global order of event kinds inside one transaction (each stream keeps its own order too).
_KIND_ORDER = {
    "NodeRetired": 0,
    "NodeAsserted": 1,
    "EdgeRetracted": 2,
    "EdgeAsserted": 3,
    "EdgesAsserted": 3,
}
# Told (files written so far, files to write) after each chunk: an MCP tool's progress
# notifications (the CLI's counters are ``Options.progress``).
Notify = Callable[[int, int], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Options:
    force: bool = False
    # Who asked (actor, session, tool call, correlation id); each event adds its ``source``.
    metadata: EventMetadata = field(default_factory=lambda: EventMetadata(actor="kg ingest"))
    workers: int = 0  # 0: one per CPU, at most 4
    report_missing: bool = True
    catch_up: bool = True
    max_bytes: int = DEFAULT_MAX_BYTES
    progress: Progress = NO_PROGRESS
    notify: Notify | None = None
    # Ingest files that hold what looks like a secret (kg.ingest.secrets) instead of refusing
    # them; the allowlist file and the inline mark are the narrower way.
    allow_secrets: bool = False


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _read_all(
    root: Path, relpaths: Sequence[str], max_bytes: int
) -> tuple[dict[str, str], list[ParseProblem]]:
    """The files' texts, and why the others were not read: a file too large, binary or not
    UTF-8 is a ``warning`` (skipped, the ingest goes on and succeeds), anything else an
    ``error``."""
    texts: dict[str, str] = {}
    problems: list[ParseProblem] = []
    for rel in relpaths:
        text, problem = read_markdown_file(root, Path(rel), max_bytes, "warning")
        if text is None:
            assert problem is not None
            problems.append(problem)
        else:
            texts[rel] = text
    return texts, problems


class Pipeline:
    """One ingest run over resolved targets."""

    def __init__(
        self, rt: IngestParts, schema: SchemaMap, targets: Targets, options: Options
    ) -> None:
        self.rt = rt
        self.root = rt.settings.project_root
        self.scope = rt.scope
        self.schema = schema
        self.schema_fp = schema_fingerprint(schema)
        self.targets = targets
        self.options = options
        self.report = IngestReport(
            problems=list(targets.problems), rejected=[p.path for p in targets.problems]
        )
        self.known_requirements: set[str] = set()
        self.dropped: dict[str, str] = {}  # shared node id -> the file that dropped it
        self.relations = RelationLedger()  # relationship edges between entities
        self.provenance = Provenance(None, set())
        self.projector = bulk.Projector(rt)
        self.tenure = Tenure()
        self._embedded_before = 0
        self._settled: set[str] = set()  # files whose outcome is recorded (see _apply)
        self.code_salt = code_fingerprint_salt()
        self.history = History()
        self._unchanged: set[str] = set()
        self._extra_specs: list[str] = []  # specs re-parsed because code they name changed

    def _fingerprint(self, rel: str, content_hash: str) -> str:
        """Source files add the code parser's version and their git facts to the schema's
        fingerprint: a file whose history changed is re-derived like an edited one."""
        salt = self.code_salt + self.history.salt(rel) if is_source(rel) else ""
        return file_fingerprint(content_hash, self.schema_fp + salt)

    async def _read_history(self) -> None:
        """Git facts for the run's source files; the files that changed together with them
        join the run, so their co-change edges follow (an incremental sync names only the
        files of the new commits)."""
        sources = [rel for rel in self.targets.files if is_source(rel)]
        if not sources:
            return
        self.history = await asyncio.to_thread(read_history, self.root, self.schema.code_history)
        listed = set(self.targets.files)
        for rel in sources:
            for other, _, _ in self.history.partners(rel):
                language = language_of(other)
                if other in listed or language is None or path_skip_reason(other) is not None:
                    continue
                skip = self.schema.code_skip_reason(other, language)
                if skip is None and (self.root / other).is_file():
                    listed.add(other)
                    self.targets.files.append(other)

    def _skip_by_path(self) -> None:
        """Vendored and generated source files are not read (counted in the summary)."""
        kept: list[str] = []
        for rel in self.targets.files:
            language = language_of(rel)
            reason = None
            if language is not None:
                reason = path_skip_reason(rel) or self.schema.code_skip_reason(rel, language)
            if reason is None:
                kept.append(rel)
            else:
                self.report.skipped.setdefault(reason, []).append(rel)
        self.targets.files = kept

    async def run(self) -> IngestReport:
        self._skip_by_path()
        await self._read_history()
        progress = self.options.progress
        progress.total(FILES_READ, len(self.targets.files))
        texts, problems = await asyncio.to_thread(
            _read_all, self.root, self.targets.files, self.options.max_bytes
        )
        progress.add(FILES_READ, len(self.targets.files))
        self.report.problems += problems
        self.report.failed += [p.path for p in problems if p.severity == "error"]
        self.report.unreadable += [p.path for p in problems if p.severity == "warning"]
        if not self.options.allow_secrets:
            await asyncio.to_thread(self._mask_secrets, texts)
        await self.rt.catch_up()  # compare against a projection that has the whole log
        self._embedded_before = self.rt.runner.ctx.embedded
        changed, removed = await self._select(texts)
        if changed:
            progress.total(FILES_PARSED, len(changed))
        self.tenure.start(len(changed) >= POOL_MIN_FILES)
        try:
            if changed or removed:
                self.provenance = await asyncio.to_thread(
                    Provenance.read, self.root, changed + removed
                )
                await self._write(changed, removed, texts)
            if self.options.catch_up:
                await self._catch_up()
                if self.dropped:
                    await self._retire_orphans()
        except BaseException:
            await self.projector.abort()
            raise
        finally:
            self.tenure.release()
        return self.report

    def _mask_secrets(self, texts: dict[str, str]) -> None:
        """Replace each possible secret by a marker before anything is parsed or appended,
        reported as a warning with ``file:line`` and the rule, never the secret."""
        allow = Allowlist.load(self.root)
        masked: list[str] = []
        for rel, text in texts.items():
            clean, findings = mask_text(rel, text, allow)
            if findings:
                texts[rel] = clean
                masked.append(rel)
                self.report.problems += [f.masked() for f in findings]
        self.report.masked += sorted(masked)

    # -- 1. what changed ------------------------------------------------------------------

    async def _select(self, texts: dict[str, str]) -> tuple[list[str], list[str]]:
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            stored = await state.fingerprints(conn, self.scope, [document_id(r) for r in texts])
            ingested = (
                await state.ingested_documents(conn, self.scope)
                if self.targets.folders or self.targets.missing
                else []
            )
        wanted = {rel: self._fingerprint(rel, _text_hash(text)) for rel, text in texts.items()}
        marked = [
            rel
            for rel, fp in wanted.items()
            if not self.options.force and stored.get(document_id(rel)) == worktree_fingerprint(fp)
        ]
        still_dirty: set[str] = set()
        if marked:  # ingested as working-tree state: unchanged only while still uncommitted
            now = await asyncio.to_thread(Provenance.read, self.root, marked)
            still_dirty = {rel for rel in marked if now.is_worktree(rel)}
        changed = [
            rel
            for rel, fp in wanted.items()
            if self.options.force or (stored.get(document_id(rel)) != fp and rel not in still_dirty)
        ]
        self.report.unchanged = len(texts) - len(changed)
        self._unchanged = set(texts) - set(changed)
        known = set(ingested)
        removed = {r for r in self.targets.missing if r in known}
        if self.options.report_missing:
            unknown = [r for r in self.targets.missing if r not in known]
            self.report.rejected += unknown
            self.report.problems += [
                ParseProblem(r, 1, "no such file (and nothing ingested from it)") for r in unknown
            ]
        listed = set(self.targets.files)
        for rel in ingested:
            if rel not in listed and self.targets.covers_removed(rel):
                removed.add(rel)
        gone = sorted(r for r in removed if not (self.root / r).exists())
        return changed, gone

    # -- 2./3. parse, diff, append --------------------------------------------------------

    async def _write(self, changed: list[str], removed: list[str], texts: dict[str, str]) -> None:
        specs = await asyncio.to_thread(discover_markdown, self.root)
        workers = self.options.workers or min(4, os.cpu_count() or 1)
        code = [rel for rel in changed if is_source(rel)]
        changed = [rel for rel in changed if not is_source(rel)]
        run = None
        if code or any(is_source(rel) for rel in removed):
            run = await self._write_code(code, removed, texts, set(specs), workers)
            changed += [p for p in self._extra_specs if p not in changed]
        requirements, extra = await self._requirements(changed, removed, texts)
        changed += extra
        names = await self._code_names(run, [texts[r] for r in changed]) if changed else None
        index = WikiIndex(specs, names, requirements)
        pool: Executor | None = None
        if workers > 1 and len(changed) >= POOL_MIN_FILES:
            pool = parsing_pool(self.root, self.schema, index, workers)
        loop = asyncio.get_running_loop()

        def parse(chunk: list[str]) -> asyncio.Future[list[ParsedDocument]]:
            items = [(rel, texts[rel]) for rel in chunk]
            return loop.run_in_executor(
                None, lambda: parse_texts(items, self.schema, index, pool=pool)
            )

        try:
            chunks = _chunks(changed)
            pending = parse(chunks[0]) if chunks else None
            for i in range(len(chunks)):
                assert pending is not None
                docs = await pending
                pending = parse(chunks[i + 1]) if i + 1 < len(chunks) else None
                for rel in chunks[i]:
                    texts.pop(rel, None)
                if i == 0 and self.options.catch_up:
                    per_file = sum(len(d.nodes) for d in docs) / max(1, len(docs))
                    await self.projector.plan(int(per_file * len(changed)))
                self.options.progress.add(FILES_PARSED, len(docs))
                await self._apply([(d.path, d) for d in docs])
                self.tenure.settle()
                if self.options.notify is not None:
                    written = sum(len(c) for c in chunks[: i + 1])
                    await self.options.notify(written, len(changed))
            for i in range(0, len(removed), CHUNK_FILES):
                await self._apply([(rel, None) for rel in removed[i : i + CHUNK_FILES]])
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)

    async def _requirements(
        self, changed: list[str], removed: list[str], texts: dict[str, str]
    ) -> tuple[RequirementIndex, list[str]]:
        """Which documents define which requirement ids once this run is applied (the graph's
        DEFINES edges, with the files parsed now scanned instead), so a mention resolves to
        the nearest definition (:mod:`kg.ingest.requirements`); and the unchanged files
        that mention an id whose definitions came or went, read to join the run."""
        replaced = set(changed) | set(removed)
        matcher = self.schema.requirements
        scanned = await asyncio.to_thread(
            lambda: {(rel, d.canonical) for rel in changed for d in matcher.definitions(texts[rel])}
        )
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            stored = await state.requirement_definitions(conn, self.scope)
            before = {(p, c) for p, c in stored if p in replaced}
            moved = sorted({c for _, c in before ^ scanned})
            mentioning = await state.files_mentioning_requirements(conn, self.scope, moved)
        index = RequirementIndex([*(d for d in stored if d[0] not in replaced), *scanned])
        extra = [p for p in mentioning if p not in replaced and (self.root / p).is_file()]
        more, problems = await asyncio.to_thread(
            _read_all, self.root, extra, self.options.max_bytes
        )
        self.report.problems += problems
        texts.update(more)
        self.report.unchanged -= len([p for p in more if p in self._unchanged])
        return index, sorted(more)

    async def _code_names(self, run: CodeRun | None, specs: list[str]) -> CodeNames | None:
        """The repository's source files and the symbols the ``specs`` (texts) may name in
        inline code: the graph's, with those of the files linked in this run instead."""
        read = Reader(self.rt.app_pool, self.scope)
        paths, entries = await read(sorted(named_in(specs)), [])
        ids = [e.node_id for e in entries]
        if run is not None:
            replaced = run.linked_paths | set(run.removed_paths)
            ids = [e.node_id for e in entries if e.file_path not in replaced] + run.symbol_ids
            paths = sorted(run.paths)
        return CodeNames(paths, ids) if paths else None

    async def _write_code(
        self,
        changed: list[str],
        removed: list[str],
        texts: dict[str, str],
        specs: set[str],
        workers: int,
    ) -> CodeRun:
        """Parse and link the changed source files as one batch (linking needs them all),
        then diff and append them in chunks like Markdown files. Returns the repository's
        code names for the specs; specs that name a symbol or file that came or went are
        added to the run (``texts``), so their REFERENCES follow."""
        stage = CodeStage(
            self.root, self.scope, self.schema.requirement_prefixes, specs, self.history
        )
        pool = None
        if workers > 1 and len(changed) >= CODE_POOL_MIN_FILES:
            from concurrent.futures import ProcessPoolExecutor

            pool = ProcessPoolExecutor(workers)
        read = Reader(self.rt.app_pool, self.scope)
        try:
            docs = await stage.link(
                read, texts, changed, [r for r in removed if is_source(r)], pool
            )
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        for rel in changed:
            texts.pop(rel, None)
        run = stage.run
        self.report.calls.add(run.stats)
        for reason, paths in run.skipped.items():
            self.report.skipped.setdefault(reason, []).extend(paths)
        self.report.problems += run.problems
        self.report.failed += [p.path for p in run.problems]
        self.report.unchanged -= len(run.relinked)
        if docs and self.options.catch_up:
            await self.projector.plan(sum(len(d.nodes) for d in docs))
        for i in range(0, len(docs), CHUNK_FILES):
            chunk = docs[i : i + CHUNK_FILES]
            await self._apply([(d.path, d) for d in chunk])
            self.tenure.settle()
        await self._specs_naming(read, sorted(run.touched), texts)
        return run

    async def _specs_naming(self, read: Reader, names: list[str], texts: dict[str, str]) -> None:
        """Specs that name any of ``names`` join the run's changed Markdown files."""
        if not names:
            return
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            paths = await code_state.specs_mentioning(conn, self.scope, names)
        extra = [p for p in paths if p not in texts and (self.root / p).is_file()]
        more, problems = await asyncio.to_thread(
            _read_all, self.root, extra, self.options.max_bytes
        )
        self.report.problems += problems
        texts.update(more)
        self.report.unchanged -= len([p for p in more if p in self._unchanged])
        self._extra_specs = sorted(more)

    async def _apply(self, items: list[tuple[str, ParsedDocument | None]]) -> None:
        usable: list[tuple[str, ParsedDocument | None]] = []
        for rel, doc in items:
            if doc is not None:
                self.report.problems += doc.problems
                if not doc.nodes:
                    self.report.failed.append(rel)
                    continue
            usable.append((rel, doc))
        for attempt in range(_RETRIES):
            try:
                # A retry re-reads and re-diffs only the files not settled by an earlier try.
                await self._diff_and_append([i for i in usable if i[0] not in self._settled])
                return
            except ConcurrencyConflictError:
                if attempt == _RETRIES - 1:
                    raise
                await self.rt.catch_up()

    async def _diff_and_append(self, items: list[tuple[str, ParsedDocument | None]]) -> None:
        streams = [stream_id(rel) for rel, _ in items]
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            heads = await state.stream_heads(conn, self.scope, streams)
            behind = max((p for _, p in heads.values()), default=0) > await state.graph_position(
                conn, self.scope.tenant_id
            )
        if behind:  # another writer touched these files since our catch-up
            await self.rt.catch_up()
        docs = [doc for _, doc in items if doc is not None]
        known_before = set(self.known_requirements)
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            projected = await state.projected_files(
                conn, self.scope, [document_id(rel) for rel, _ in items]
            )
            wanted = sorted(requirement_ids(docs) - self.known_requirements)
            self.known_requirements |= await state.existing_nodes(conn, self.scope, wanted)
            entities = self.relations.missing(
                e
                for rel, doc in items
                for e in mentioned_entities(projected[document_id(rel)], doc)
            )
            if entities:
                rows = await state.relation_edges(conn, self.scope, entities)
                self.relations.load(entities, rows)
        changes: list[tuple[FileChange, EventMetadata]] = []
        for rel, doc in items:
            change = self._diff_one(rel, doc, projected[document_id(rel)])
            if change is None or not change.events:
                self._settled.add(rel)  # failed, or nothing to append
            else:
                content_hash = doc.content_hash if doc is not None else None
                meta = self._metadata(self.provenance.source(rel, content_hash))
                changes.append((change, meta))
        expected = {s: heads.get(s, (0, 0))[0] for s in streams}
        try:
            for batch in _transactions(changes):
                await self._append(batch, expected)
        except ConcurrencyConflictError:
            # What the failed transaction would have asserted is not in the graph: forget it,
            # so the retry asks the (caught-up) graph again.
            self.known_requirements = known_before
            self.relations = RelationLedger()  # reloaded from the graph, which has what committed
            raise

    def _metadata(self, source: str) -> EventMetadata:
        return self.options.metadata.model_copy(update={"source": source})

    def _diff_one(
        self, rel: str, doc: ParsedDocument | None, projected: ProjectedFile
    ) -> FileChange | None:
        source: dict[str, Any] | None = None
        if doc is not None:
            fingerprint = self._fingerprint(rel, doc.content_hash)
            source = {"path": rel, "sha256": doc.content_hash, "fingerprint": fingerprint}
            if self.provenance.is_worktree(rel):  # see kg.ingest.provenance
                source["fingerprint"] = worktree_fingerprint(fingerprint)
                source["worktree"] = True
        reason = f"{rel} was removed" if doc is None else f"no longer in {rel}"
        if doc is not None:
            doc = link_edits(doc, projected)  # an edited rule statement supersedes the old one
        known_before = set(self.known_requirements)
        try:
            change = diff_file(
                rel,
                doc,
                projected,
                source=source,
                known_requirements=self.known_requirements,
                reason=reason,
                relations=self.relations,
            )
        except pydantic.ValidationError as error:
            self.known_requirements = known_before
            first = error.errors()[0]
            self.report.problems.append(
                ParseProblem(rel, 1, f"cannot be ingested: {first['loc']}: {first['msg']}")
            )
            self.report.failed.append(rel)
            return None
        if len(change.events) > MAX_BATCH:
            self.report.problems.append(
                ParseProblem(rel, 1, f"refused: {len(change.events)} changes, over {MAX_BATCH}")
            )
            self.report.failed.append(rel)
            return None
        for req in change.dropped_requirements:
            self.dropped.setdefault(req, rel)
        if not change.events:
            self.report.unchanged += 1
        return change

    async def _append(
        self, batch: list[tuple[FileChange, EventMetadata]], expected: dict[str, int]
    ) -> None:
        keyed = [
            (
                _KIND_ORDER.get(event.event_type, 4),
                n,
                stream_id(c.relpath),
                PendingEvent(event, meta),
            )
            for n, (c, meta) in enumerate(batch)
            for event in c.events
        ]
        keyed.sort(key=lambda t: (t[0], t[1]))  # stable: each file keeps its own order
        streams = {stream_id(c.relpath) for c, _ in batch}
        results = await append_multi(
            self.rt.store,
            self.scope,
            [StreamEvent(t[2], t[3]) for t in keyed],
            expected_versions={s: v for s, v in expected.items() if s in streams},
        )
        for change, _ in batch:
            self._settled.add(change.relpath)
            (self.report.removed if change.removed else self.report.changed).append(change.relpath)
            self.report.nodes_asserted += change.nodes_asserted
            self.report.nodes_retired += change.nodes_retired
            self.report.edges_asserted += change.edges_asserted
            self.report.edges_retracted += change.edges_retracted
            self.report.events += len(change.events)
        self.options.progress.add(EVENTS_APPENDED, sum(len(c.events) for c, _ in batch))
        if results:
            self.report.note_positions(
                min(r.first_position for r in results), max(r.last_position for r in results)
            )
        if self.options.catch_up:
            self.projector.kick()  # project this transaction while the next one is prepared

    # -- 4. project, clean up -------------------------------------------------------------

    async def _catch_up(self) -> None:
        await self.projector.finish()
        self.report.projected = self.projector.applied
        self.report.catch_up_seconds = self.projector.tail_seconds
        self.report.embedded = self.rt.runner.ctx.embedded - self._embedded_before

    async def _retire_orphans(self) -> None:
        async with state.scoped(self.rt.app_pool, self.scope) as conn:
            orphans = await state.orphan_requirements(conn, self.scope, sorted(self.dropped))
        if not orphans:
            return
        by_file: dict[str, list[str]] = {}
        for req in orphans:
            by_file.setdefault(self.dropped[req], []).append(req)
        items = []
        for rel, reqs in sorted(by_file.items()):
            meta = self._metadata(self.provenance.source(rel, None))
            for req in reqs:
                event = NodeRetired(node_id=req, reason=f"no file mentions it since {rel} changed")
                items.append(StreamEvent(stream_id(rel), PendingEvent(event, meta)))
        results = await append_multi(self.rt.store, self.scope, items)
        self.report.nodes_retired += len(items)
        self.report.events += len(items)
        self.report.note_positions(
            min(r.first_position for r in results), max(r.last_position for r in results)
        )
        await self._catch_up()


def _chunks(files: list[str]) -> list[list[str]]:
    """The changed files in chunks of at most :data:`CHUNK_FILES`, and at least
    :data:`PIPELINE_CHUNKS` of them when there are enough files (each of at least
    :data:`MIN_CHUNK_FILES`).

    A chunk is parsed while the one before is appended, and the projections catch up on each
    appended chunk in the background (:class:`~kg.ingest.bulk.Projector`), so with one chunk
    nothing overlaps: 200 rule files of 25 directives each were parsed, then appended, then
    projected, one after the other. In four chunks kg_nodes projects the first ones
    (embeddings, full-text vectors, in the database) while the later ones are parsed and
    appended, and what is left to project after the last append is about a quarter. Measured
    (bench/RESULTS.md, issue 20): 5,000 directives in 7.1 s instead of 9.6 on a loaded
    machine (medians of 3), no difference on a quiet one. A large run keeps chunks of
    CHUNK_FILES."""
    size = min(CHUNK_FILES, max(MIN_CHUNK_FILES, -(-len(files) // PIPELINE_CHUNKS)))
    return [files[i : i + size] for i in range(0, len(files), size)]


def _transactions(
    changes: list[tuple[FileChange, EventMetadata]],
) -> Iterator[list[tuple[FileChange, EventMetadata]]]:
    """Split into transactions of at most :data:`TXN_EVENTS` events (a file is never split)."""
    batch: list[tuple[FileChange, EventMetadata]] = []
    size = 0
    for item in changes:
        count = len(item[0].events)
        if batch and size + count > TXN_EVENTS:
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += count
    if batch:
        yield batch
