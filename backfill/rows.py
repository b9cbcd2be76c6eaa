"""Table specs: the fields a legacy table is read for, and how its actual columns map to them.

Schema drift is absorbed here: each field lists the column names it has been seen under; a
missing optional column reads as NULL; a missing required column makes every row of the table
unimportable (each reported); columns no field claims are kept as ``properties.legacy`` on
nodes, so nothing the operator had is thrown away without a trace.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from backfill.legacy_db import LegacyTable
from backfill.links import Links
from backfill.values import RowRejected, json_value, text
from kg.events import DomainEvent


@dataclass(frozen=True)
class Field:
    aliases: tuple[str, ...]
    required: bool = False


@dataclass(frozen=True)
class Layout:
    """One legacy table's actual columns against a spec's fields."""

    columns: dict[str, str]  # field -> the column present for it
    missing_required: tuple[str, ...]
    extra: tuple[str, ...]
    positions: dict[str, int]  # field -> index of its column in a row
    extra_positions: tuple[tuple[str, int], ...]


@dataclass
class Row:
    """One legacy row being mapped. ``warnings`` collects what was dropped from it."""

    rowid: int
    key: str
    key_column: str
    source: str
    record: tuple[Any, ...]
    layout: Layout
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> Any:
        """The raw value of a field (``None`` when the table lacks its column)."""
        index = self.layout.positions.get(name)
        return None if index is None else self.record[index]

    def col(self, name: str) -> str:
        return self.layout.columns.get(name, name)

    def text(self, name: str, *, required: bool = False) -> str | None:
        return text(self.get(name), self.col(name), required=required)

    def required(self, name: str) -> str:
        value = self.text(name, required=True)
        assert value is not None
        return value

    def legacy_properties(self) -> dict[str, Any]:
        record = self.record
        return {
            c: json_value(record[i])
            for c, i in self.layout.extra_positions
            if record[i] is not None
        }


@dataclass
class Mapped:
    """The events one row becomes, and who (legacy author, session) it came from."""

    events: list[DomainEvent]
    actor: str | None = None
    session_id: str | None = None


@dataclass
class MapContext:
    prefix: str  # the file label's stem, namespacing ids: decision:org-42
    links: Links


_ID_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,150}$")


def id_part(row: Row) -> str:
    """The row key as it may appear inside a decision id (stricter than node ids)."""
    if not _ID_PART.match(row.key):
        raise RowRejected(
            f"{row.key_column} {row.key[:40]!r} cannot be part of an id: use letters, digits, "
            "'_', '.', ':' or '-'"
        )
    return row.key


def compact(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != {}}


class TableSpec:
    """A legacy table the backfill knows. ``key`` names the field identifying a row (its value
    goes into provenance and ids); ``None`` means the SQLite rowid."""

    name: ClassVar[str]
    key: ClassVar[str | None] = None
    fields: ClassVar[dict[str, Field]]
    #: the table's rows are needed by later tables even when already imported
    indexes_all_rows: ClassVar[bool] = False
    #: columns no field claims go into ``properties.legacy`` (node tables only)
    keeps_extra: ClassVar[bool] = False

    def layout(self, table: LegacyTable) -> Layout:
        present = set(table.columns)
        chosen: dict[str, str] = {}
        missing = []
        for name, spec in self.fields.items():
            column = next((a for a in spec.aliases if a in present), None)
            if column is not None:
                chosen[name] = column
            elif spec.required:
                missing.append(" or ".join(spec.aliases))
        used = set(chosen.values())
        extra = tuple(c for c in table.columns if c not in used)
        index = {c: i for i, c in enumerate(table.columns)}
        positions = {name: index[c] for name, c in chosen.items()}
        return Layout(chosen, tuple(missing), extra, positions, tuple((c, index[c]) for c in extra))

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        raise NotImplementedError

    def index(self, row: Row, ctx: MapContext) -> None:
        """Record an importable row for later tables (``indexes_all_rows`` specs only)."""
        return None


def actor_of(row: Row) -> str | None:
    """The legacy author, when the row names one that fits the metadata field."""
    actor = row.text("actor")
    return actor.strip() if actor and len(actor.strip()) <= 200 else None
