"""What a backfill did (or, in a dry run, would do), per table, with every row it could not
import and why."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

UNRESOLVED = "unresolved call"


@dataclass(frozen=True)
class RowIssue:
    where: str  # the row's provenance, e.g. org.db/decisions#42
    reason: str


@dataclass
class TableReport:
    database: str
    table: str
    present: bool = True
    rows: int = 0
    imported: int = 0  # rows appended now (in a dry run: that would be)
    already: int = 0  # rows an earlier run imported
    events: int = 0  # events appended (rows, plus a Session node per new session)
    rejected: list[RowIssue] = field(default_factory=list)
    warnings: list[RowIssue] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.database}/{self.table}"

    @property
    def unresolved(self) -> int:
        return sum(1 for r in self.rejected if r.reason.startswith(UNRESOLVED))

    def reject(self, where: str, reason: str) -> None:
        self.rejected.append(RowIssue(where, reason))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["unresolved"] = self.unresolved
        return data


@dataclass
class BackfillReport:
    dry_run: bool
    tables: list[TableReport] = field(default_factory=list)

    def total(self, attr: str) -> int:
        return sum(int(getattr(t, attr)) for t in self.tables)

    @property
    def rejected(self) -> list[RowIssue]:
        return [r for t in self.tables for r in t.rejected]

    @property
    def warnings(self) -> list[RowIssue]:
        return [w for t in self.tables for w in t.warnings]

    def table(self, database: str, table: str) -> TableReport:
        for t in self.tables:
            if (t.database, t.table) == (database, table):
                return t
        raise KeyError(f"{database}/{table}")

    def to_dict(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "tables": [t.to_dict() for t in self.tables]}

    def lines(self, *, max_listed: int | None = 100) -> list[str]:
        """The plain-text report: the per-table counts, then the rows not imported and the
        warnings (up to ``max_listed`` each; the counts always cover all of them)."""
        verb = "would import" if self.dry_run else "imported"
        header = ("table", "rows", verb, "already", "rejected", "unresolved", "warnings")
        body = [
            (
                t.name,
                *(
                    (str(t.rows), str(t.imported), str(t.already), str(len(t.rejected)))
                    if t.present
                    else ("absent", "-", "-", "-")
                ),
                str(t.unresolved) if t.present else "-",
                str(len(t.warnings)) if t.present else "-",
            )
            for t in self.tables
        ]
        total = (
            "total",
            str(self.total("rows")),
            str(self.total("imported")),
            str(self.total("already")),
            str(len(self.rejected)),
            str(sum(t.unresolved for t in self.tables)),
            str(len(self.warnings)),
        )
        widths = [max(len(r[i]) for r in (header, *body, total)) for i in range(len(header))]

        def fmt(cells: tuple[str, ...]) -> str:
            first = cells[0].ljust(widths[0])
            rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
            return "  ".join((first, *rest))

        out = ["DRY RUN: nothing was written" if self.dry_run else "backfill done"]
        out += [fmt(header), *(fmt(r) for r in body), fmt(total)]
        events = self.total("events")
        out.append(f"events {'to append' if self.dry_run else 'appended'}: {events}")
        for t in self.tables:
            out += [f"note: {t.name}: {note}" for note in t.notes]
        for title, issues in (
            ("rows not imported", self.rejected),
            ("imported with warnings", self.warnings),
        ):
            if not issues:
                continue
            shown = issues if max_listed is None else issues[:max_listed]
            more = len(issues) - len(shown)
            suffix = f" (first {len(shown)}; --report FILE lists all)" if more else ""
            out.append(f"{title}: {len(issues)}{suffix}")
            out += [f"  {i.where}: {i.reason}" for i in shown]
        return out
