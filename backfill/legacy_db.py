"""A legacy SQLite database, opened read-only: its tables, their columns, their rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backfill.values import decode_text
from kg.errors import ValidationError


@dataclass(frozen=True)
class LegacyTable:
    name: str
    columns: tuple[str, ...]  # lower-cased


class LegacyDatabase:
    """Read-only access (``mode=ro``: the backfill never changes the legacy file).

    ``label`` is the file name: it names the source in provenance (``org.db/decisions#42``) and
    so identifies the file to later runs. Two different files with the same name are the same
    source to the backfill: rename one of them first.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.label = path.name
        if not path.is_file():
            raise ValidationError(f"{path}: no such file")
        self._conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        self._conn.text_factory = decode_text
        try:
            names = [
                r[0]
                for r in self._conn.execute(
                    "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
                )
            ]
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ValidationError(f"{path} is not a readable SQLite database ({exc})") from None
        self.tables: dict[str, LegacyTable] = {}
        for name in names:
            if not isinstance(name, str):
                continue
            info = self._conn.execute(f'PRAGMA table_info("{_quote(name)}")').fetchall()
            columns = tuple(str(c[1]).lower() for c in info)
            self.tables[name.lower()] = LegacyTable(name, columns)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> LegacyDatabase:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def count(self, table: LegacyTable) -> int:
        return int(self._conn.execute(f'SELECT count(*) FROM "{_quote(table.name)}"').fetchone()[0])

    def rows(self, table: LegacyTable) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """``(rowid, values in table.columns order)`` in rowid order (stable across runs)."""
        try:
            cursor = self._conn.execute(
                f'SELECT rowid, * FROM "{_quote(table.name)}" ORDER BY rowid'
            )
        except sqlite3.OperationalError as exc:
            raise ValidationError(
                f"{self.label}: table {table.name} cannot be read in rowid order ({exc}); "
                "WITHOUT ROWID tables are not supported: copy it into an ordinary table"
            ) from None
        for record in cursor:
            yield int(record[0]), record[1:]


def _quote(name: str) -> str:
    return name.replace('"', '""')
