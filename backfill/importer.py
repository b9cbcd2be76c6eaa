"""Turn legacy rows into events, in chunks, exactly once.

Idempotent and resumable without a state file of its own: the log is the state. Each table goes
to one stream (``backfill:org.db/decisions``) and every event names its row in
``metadata.source``. A run first reads the sources that stream already holds (one query) and
skips those rows; the rest are appended in chunks of thousands of events, each chunk one
transaction with

* ``expected_version`` = the stream's version when the chunk was prepared, so another writer
  appending to the stream during the run makes this one stop with a conflict, and
* an idempotency key derived from the stream and the rows in the chunk, so a retried chunk
  (a client that lost the commit acknowledgement) is a no-op.

A run killed midway has committed whole chunks only; the rerun skips them and imports the rest.

Two backfills of the same file into the same scope never run side by side: a run holds a
PostgreSQL advisory lock per file (tenant, project and file name) from before its first read
to its end, and a second run that cannot take it stops at once with
:class:`~kg.errors.BackfillConflictError`. (Without the lock, two runs with the same chunk size
would both go on: the second's chunks match the first's idempotency keys and come back as
duplicates instead of conflicts.) The lock is a session lock, so a killed run releases it with
its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from backfill.legacy_db import LegacyDatabase, LegacyTable
from backfill.links import Links
from backfill.org_tables import Decisions, ErrorSolutions, SkillLearnings
from backfill.report import BackfillReport, RowIssue, TableReport
from backfill.rows import Layout, MapContext, Row, TableSpec
from backfill.session_tables import CallEdges, Functions, Memory
from backfill.values import RowRejected, text
from kg.config import Scope
from kg.db.tenancy import set_tenant
from kg.errors import BackfillConflictError, ConcurrencyConflictError, ValidationError
from kg.events import EventMetadata, EventStore, PendingEvent

#: Known tables in import order (functions before the edges and memory rows that name them).
FAMILIES: tuple[tuple[TableSpec, ...], ...] = (
    (Decisions(), ErrorSolutions(), SkillLearnings()),
    (Functions(), CallEdges(), Memory()),
)
MAX_CHUNK = 20_000  # rows; a memory row can be two events and an append takes <= 50,000

_EXISTING = """
SELECT metadata->>'source' AS source, stream_version FROM kg_events
 WHERE tenant_id = $1 AND project_id = $2 AND stream_id = $3
"""
_SESSIONS = """
SELECT DISTINCT payload->>'node_id' AS node_id FROM kg_events
 WHERE tenant_id = $1 AND event_type = 'NodeAsserted' AND project_id = $2
   AND payload->>'node_type' = 'Session'
"""


@dataclass(frozen=True)
class BackfillOptions:
    dry_run: bool = False
    chunk_size: int = 5000
    actor: str = "kg backfill"
    #: seconds to wait after each committed chunk, to spare a busy database
    pause: float = 0.0
    #: called after each committed chunk with the table name and its rows committed so far
    progress: Callable[[str, int], None] | None = None


@dataclass
class _Chunk:
    sources: list[str] = field(default_factory=list)
    events: list[PendingEvent] = field(default_factory=list)


def stream_for(label: str, table: str) -> str:
    return f"backfill:{label}/{table}"


def chunk_key(stream: str, sources: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join((stream, *sources)).encode()).hexdigest()
    return f"backfill:{digest[:48]}"


def _prefix(label: str) -> str:
    stem = label.rsplit(".", 1)[0] if "." in label[1:] else label
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "-" for c in stem).strip(".-_")
    return cleaned or "legacy"


class _TableImport:
    """One legacy table into its stream."""

    def __init__(
        self,
        importer: Backfill,
        db: LegacyDatabase,
        spec: TableSpec,
        table: LegacyTable,
        ctx: MapContext,
    ) -> None:
        self.importer, self.db, self.spec, self.table, self.ctx = importer, db, spec, table, ctx
        self.stream = stream_for(db.label, spec.name)
        self.report = TableReport(db.label, spec.name)
        self.version = 0
        self.committed = 0

    def _notes(self, layout: Layout) -> None:
        for missing in layout.missing_required:
            self.report.notes.append(f"required column {missing} is missing: no row can import")
        absent = [
            f
            for f, spec in self.spec.fields.items()
            if f not in layout.columns and not spec.required
        ]
        if absent:
            self.report.notes.append(f"optional columns absent (read as NULL): {', '.join(absent)}")
        if layout.extra:
            fate = "kept in properties.legacy" if self.spec.keeps_extra else "not imported"
            self.report.notes.append(f"extra columns {fate}: {', '.join(layout.extra)}")

    async def run(self) -> TableReport:
        layout = self.spec.layout(self.table)
        self._notes(layout)
        sources, self.version = await self.importer.existing(self.stream)
        key = self.spec.key
        # (index in the row, column name) of the row key; None: the rowid is the key
        key_at = (layout.positions[key], layout.columns[key]) if key in layout.columns else None
        seen: dict[str, int] = {}
        chunk = _Chunk()
        report, opts = self.report, self.importer.options
        for rowid, raw in self.db.rows(self.table):
            report.rows += 1
            where = f"{self.db.label}/{self.spec.name} rowid {rowid}"
            try:
                if layout.missing_required:
                    raise RowRejected(layout_reason(layout))
                value = str(rowid)
                if key_at is not None:
                    value = (text(raw[key_at[0]], key_at[1], required=True) or "").strip()
                source = where = f"{self.db.label}/{self.spec.name}#{value}"
                if key_at is not None:
                    if value in seen:
                        where = f"{source} (rowid {rowid})"
                        raise RowRejected(
                            f"duplicate {key_at[1]} {value!r}: rowid {seen[value]} has it"
                        )
                    seen[value] = rowid
                row = Row(rowid, value, key_at[1] if key_at else "rowid", source, raw, layout)
                if self.spec.indexes_all_rows:
                    self.spec.index(row, self.ctx)
                if source in sources:
                    report.already += 1
                    continue
                mapped = self.spec.map(row, self.ctx)
            except (RowRejected, ValidationError) as exc:
                report.reject(where, str(exc))
                continue
            report.warnings += [RowIssue(source, warning) for warning in row.warnings]
            metadata = EventMetadata(
                actor=mapped.actor or opts.actor, session_id=mapped.session_id, source=source
            )
            chunk.sources.append(source)
            chunk.events += [PendingEvent(e, metadata) for e in mapped.events]
            report.imported += 1
            report.events += len(mapped.events)
            if len(chunk.sources) >= opts.chunk_size:
                await self._flush(chunk)
                chunk = _Chunk()
        await self._flush(chunk)
        return report  # its last chunk may still be in flight: Backfill.run drains it

    async def _flush(self, chunk: _Chunk) -> None:
        if chunk.sources and not self.importer.options.dry_run:
            await self.importer.submit(self._append(chunk))

    async def _append(self, chunk: _Chunk) -> None:
        importer = self.importer
        try:
            result = await importer.store.append(
                importer.scope,
                self.stream,
                chunk.events,
                expected_version=self.version,
                idempotency_key=chunk_key(self.stream, chunk.sources),
            )
        except ConcurrencyConflictError:
            raise BackfillConflictError(
                f"another writer appended to {self.stream} during this run (a second backfill of "
                f"{self.db.label}?); this chunk of {len(chunk.sources)} rows was not written. "
                "Rerun when it has finished: rows already imported are skipped."
            ) from None
        if result.duplicate:  # an identical chunk committed by another attempt
            self.report.imported -= len(chunk.sources)
            self.report.already += len(chunk.sources)
            self.report.events -= len(chunk.events)
            _, self.version = await importer.existing(self.stream)
        else:
            self.version = result.to_version
            self.committed += len(chunk.sources)
        if importer.options.progress is not None:
            importer.options.progress(f"{self.db.label}/{self.spec.name}", self.committed)
        if importer.options.pause > 0:
            await asyncio.sleep(importer.options.pause)


def layout_reason(layout: Layout) -> str:
    return f"required column {' and '.join(layout.missing_required)} is missing from the table"


class Backfill:
    """Backfill legacy SQLite files into one scope of the event store."""

    def __init__(self, store: EventStore, scope: Scope, options: BackfillOptions) -> None:
        if not 1 <= options.chunk_size <= MAX_CHUNK:
            raise ValidationError(f"chunk size {options.chunk_size} is out of range: 1-{MAX_CHUNK}")
        self.store, self.scope, self.options = store, scope, options
        self._inflight: asyncio.Task[None] | None = None

    async def submit(self, append: Coroutine[Any, Any, None]) -> None:
        """Start an append once the previous one (of any table) has committed: one append is
        in flight while the next chunk is read and mapped, so Python and PostgreSQL overlap.
        Appends stay in order, which each stream's expected version relies on."""
        try:
            await self.drain()
        except BaseException:
            append.close()  # never started: no "coroutine was never awaited" on the way out
            raise
        self._inflight = asyncio.create_task(append)

    async def drain(self) -> None:
        if self._inflight is not None:
            task, self._inflight = self._inflight, None
            await task

    @property
    def pool(self) -> asyncpg.Pool:
        return self.store.pool

    async def existing(self, stream: str) -> tuple[set[str], int]:
        """The sources already in ``stream`` and its version."""
        async with self.pool.acquire() as conn, conn.transaction():
            await set_tenant(conn, self.scope.tenant_id)
            rows = await conn.fetch(_EXISTING, self.scope.tenant_id, self.scope.project_id, stream)
        return {r["source"] for r in rows if r["source"]}, max(
            (r["stream_version"] for r in rows), default=0
        )

    async def _sessions(self) -> set[str]:
        async with self.pool.acquire() as conn, conn.transaction():
            await set_tenant(conn, self.scope.tenant_id)
            rows = await conn.fetch(_SESSIONS, self.scope.tenant_id, self.scope.project_id)
        return {r["node_id"] for r in rows}

    @contextlib.asynccontextmanager
    async def _exclusive(self, databases: Sequence[LegacyDatabase]) -> AsyncIterator[None]:
        """Hold this scope's backfill lock on each file for the run (nothing for a dry run).

        Raises:
            BackfillConflictError: another run holds one of them.
        """
        if self.options.dry_run:
            yield
            return
        async with self.pool.acquire() as conn:
            try:
                for db in databases:
                    taken = await conn.fetchval(
                        "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                        lock_name(self.scope, db.label),
                    )
                    if not taken:
                        raise BackfillConflictError(
                            f"another backfill of {db.label} into {self.scope.tenant_id}/"
                            f"{self.scope.project_id} is running; this run wrote nothing. "
                            "Rerun when it has finished: rows it imported are skipped."
                        )
                yield
            finally:
                # a connection the server dropped has released its locks already
                with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, OSError):
                    await conn.execute("SELECT pg_advisory_unlock_all()")

    async def run(self, paths: Sequence[Path]) -> BackfillReport:
        databases = open_all(paths)
        report = BackfillReport(self.options.dry_run)
        try:
            async with self._exclusive(databases):
                try:
                    await self._run(databases, report)
                finally:
                    if self._inflight is not None:  # failed midway: a half-sent chunk rolls back
                        self._inflight.cancel()
                        with contextlib.suppress(BaseException):
                            await self._inflight
                        self._inflight = None
        finally:
            for db in databases:
                db.close()
        return report

    async def _run(self, databases: Sequence[LegacyDatabase], report: BackfillReport) -> None:
        sessions = await self._sessions()
        for db in databases:
            ctx = MapContext(_prefix(db.label), Links(sessions=sessions))
            for family in FAMILIES:
                if not any(spec.name in db.tables for spec in family):
                    continue
                for spec in family:
                    table = db.tables.get(spec.name)
                    if table is None:
                        report.tables.append(TableReport(db.label, spec.name, present=False))
                        continue
                    report.tables.append(await _TableImport(self, db, spec, table, ctx).run())
        await self.drain()


def lock_name(scope: Scope, label: str) -> str:
    """What a run's advisory lock on one legacy file is keyed on (hashed to 64 bits)."""
    return f"kg backfill\n{scope.tenant_id}\n{scope.project_id}\n{label}"


def open_all(paths: Sequence[Path]) -> list[LegacyDatabase]:
    """Open every file first, so a bad path fails the run before anything is written."""
    if not paths:
        raise ValidationError("no legacy database given: pass the paths of org.db or sessions.db")
    known = {spec.name for family in FAMILIES for spec in family}
    opened: list[LegacyDatabase] = []
    try:
        for path in paths:
            db = LegacyDatabase(path)
            opened.append(db)
            if not known & set(db.tables):
                raise ValidationError(
                    f"{path} has none of the legacy tables ({', '.join(sorted(known))})"
                )
            twins = [o.path for o in opened[:-1] if o.label == db.label]
            if twins:
                raise ValidationError(
                    f"{path} and {twins[0]} have the same file name, which identifies the source "
                    "in provenance and for reruns: rename one of them"
                )
    except BaseException:
        for db in opened:
            db.close()
        raise
    return opened


async def run_backfill(
    store: EventStore, scope: Scope, paths: Sequence[Path], options: BackfillOptions | None = None
) -> BackfillReport:
    """Import ``paths`` (org.db and/or sessions.db files) and report per table."""
    return await Backfill(store, scope, options or BackfillOptions()).run(paths)
