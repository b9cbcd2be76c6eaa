"""What an ingest or a sync did, for the CLI, the MCP tools and the hooks' log."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kg.ingest.code.resolve import CallStats
from kg.parsed.model import ParseProblem


@dataclass(slots=True)
class IngestReport:
    """Counts of one ingest. ``failed`` files could not be read or parsed into nodes (their
    problems say why); their earlier nodes, if any, are kept as they were. ``rejected`` paths
    were refused before reading (outside the project, not Markdown) or do not exist.
    ``unreadable`` files were read but are no text kg takes (too large, binary, not UTF-8):
    a warning each, not a failure; their earlier nodes are kept too. ``masked`` files held a
    possible secret, replaced by a marker before ingesting (a warning each, with file:line).
    ``skipped`` source files were left out on purpose (vendored, generated, minified), by
    reason."""

    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    masked: list[str] = field(default_factory=list)
    nodes_asserted: int = 0
    nodes_retired: int = 0
    edges_asserted: int = 0
    edges_retracted: int = 0
    events: int = 0
    first_position: int | None = None
    last_position: int | None = None
    projected: int = 0
    embedded: int = 0
    problems: list[ParseProblem] = field(default_factory=list)
    # Source files left out on purpose, by reason (vendored, generated, minified).
    skipped: dict[str, list[str]] = field(default_factory=dict)
    calls: CallStats = field(default_factory=CallStats)
    seconds: float = 0.0
    catch_up_seconds: float = 0.0  # of ``seconds``: waiting for projections after appending
    # Nodes projected without their vector (graph first, vectors after; or the embedder was
    # unavailable): a warning when the command ends with some (kg.projections.embedding_backlog).
    waiting_embeddings: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        return (
            len(self.changed)
            + self.unchanged
            + len(self.removed)
            + len(self.failed)
            + len(self.unreadable)
        )

    @property
    def errors(self) -> list[ParseProblem]:
        return [p for p in self.problems if p.severity == "error"]

    def note_positions(self, first: int, last: int) -> None:
        self.first_position = first if self.first_position is None else self.first_position
        self.last_position = last

    def summary(self) -> str:
        text = (
            f"{self.files} files: {len(self.changed)} changed, {self.unchanged} unchanged, "
            f"{len(self.removed)} removed, {len(self.failed)} failed"
        )
        if self.unreadable:
            text += f", {len(self.unreadable)} skipped"
        if self.masked:
            text += f", {len(self.masked)} with a secret removed"
        text += f"; {self.events} events"
        if self.first_position is not None:
            text += f" at positions {self.first_position}..{self.last_position}"
        if self.skipped:
            counts = ", ".join(f"{len(v)} {k}" for k, v in sorted(self.skipped.items()))
            text += f"; skipped {counts}"
        if self.calls.resolved or self.calls.unresolved:
            text += f"; {self.calls.summary()}"
        return text

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = [str(p) for p in self.problems]
        data["files"] = self.files
        return data


@dataclass(slots=True)
class SyncReport:
    """``mode`` is ``incremental`` (files changed between two commits), ``full`` (every file,
    with ``reason``) or ``up to date`` (nothing committed since the last sync)."""

    mode: str
    from_commit: str | None
    to_commit: str | None
    reason: str = ""
    paths: list[str] = field(default_factory=list)
    ingest: IngestReport | None = None
    #: what applying the policy files did (kg.governance.sync), '' when the project has none
    policies: str = ""
    #: an up-to-date sync's own warnings (nodes still waiting for an embedding)
    warnings: list[str] = field(default_factory=list)

    @property
    def all_warnings(self) -> list[str]:
        return [*self.warnings, *(self.ingest.warnings if self.ingest else [])]

    def summary(self) -> str:
        if self.mode == "up to date":
            return f"up to date at {_short(self.to_commit)}"
        if self.mode == "full":
            head = f"full scan ({self.reason})"
        else:
            head = (
                f"incremental {_short(self.from_commit)}..{_short(self.to_commit)}: "
                f"{len(self.paths)} Markdown or source files changed"
            )
        text = head if self.ingest is None else f"{head}; {self.ingest.summary()}"
        return f"{text}; {self.policies}" if self.policies else text

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "from_commit": self.from_commit,
            "to_commit": self.to_commit,
            "reason": self.reason,
            "paths": self.paths,
            "ingest": None if self.ingest is None else self.ingest.to_dict(),
            "policies": self.policies,
        }


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "none"
