"""Importers from the legacy SQLite decision tables of ADR-151 (``org.db``, ``sessions.db``).

Rows become the domain events the live system writes, each with its provenance in
``metadata.source``; runs are idempotent and resumable; every row that cannot be imported is
reported with the reason. Entry points: :func:`run_backfill` (``kg backfill``) and
:func:`backfill.generate.generate` (a realistic legacy database for tests and benchmarks).
"""

from backfill.importer import BackfillOptions, run_backfill
from backfill.report import BackfillReport, RowIssue, TableReport
from kg.errors import BackfillConflictError

__all__ = [
    "BackfillConflictError",
    "BackfillOptions",
    "BackfillReport",
    "RowIssue",
    "TableReport",
    "run_backfill",
]
