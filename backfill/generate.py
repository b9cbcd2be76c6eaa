"""A realistic legacy ``org.db`` and ``sessions.db`` (ADR-151 tables) for tests and benchmarks.

Most rows are ordinary; a known few are broken the ways real legacy data is (NULLs in required
columns, blank text, a NUL character, bytes that are not UTF-8, text too long for a decision,
duplicate-free but dangling references, calls to external or ambiguous functions) or merely
untidy (text in numeric columns, out-of-range confidences: imported with a warning). The schema
drifts too: an extra column here, a missing optional one there. :class:`GeneratedLegacy` says
exactly what a correct backfill must import, reject and warn about.

Run: ``python -m backfill.generate OUT_DIR [--rows N] [--seed S]``
"""

from __future__ import annotations

import argparse
import random
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SHARES = {
    "decisions": 0.12,
    "error_solutions": 0.08,
    "skill_learnings": 0.08,
    "call_graph_functions": 0.22,
    "call_graph_edges": 0.40,
    "call_graph_memory": 0.10,
}
MIN_ROWS = 40

COMPONENTS = [
    "checkout",
    "payments",
    "ledger",
    "auth",
    "search",
    "inventory",
    "shipping",
    "billing",
    "catalog",
    "gateway",
    "notifications",
    "reporting",
    "scheduler",
    "importer",
    "cache",
    "session",
    "profile",
    "orders",
    "refunds",
    "audit",
]
TECH = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "gRPC",
    "GraphQL",
    "SQLite",
    "RabbitMQ",
    "Celery",
    "asyncio",
    "pgvector",
    "OpenTelemetry",
    "Terraform",
    "Docker",
    "Kubernetes",
    "FastAPI",
    "pydantic",
    "SQLAlchemy",
    "httpx",
]
QUALITIES = [
    "strong consistency",
    "lower latency",
    "simpler operations",
    "better observability",
    "fewer moving parts",
    "cheaper scaling",
    "typed contracts",
    "replayable history",
    "faster tests",
]
ERRORS = [
    "TimeoutError",
    "ConnectionResetError",
    "KeyError",
    "ValueError",
    "IntegrityError",
    "DeadlockDetected",
    "UniqueViolation",
    "PermissionError",
    "RecursionError",
    "MemoryError",
]
VERBS = [
    "load",
    "save",
    "parse",
    "render",
    "validate",
    "compute",
    "fetch",
    "build",
    "merge",
    "apply",
    "sync",
    "emit",
]
AGENTS = ("claude-code", "alice", "bob", "codex", "carol", "cursor-agent")
DECISION_TYPES = ("architecture", "technology", "process", "security", "api", "general")
EXTERNAL_CALLS = ("print", "len", "json.dumps", "logging.info", "os.path.join", "sorted")


@dataclass
class GeneratedLegacy:
    """The generated files and what a correct backfill makes of them."""

    org: Path
    sessions: Path
    rows: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)  # rows that must be reported
    warnings: dict[str, int] = field(default_factory=dict)  # rows imported with a warning
    unresolved: int = 0  # call_graph_edges rows whose callee cannot be resolved
    session_ids: set[str] = field(default_factory=set)  # sessions of importable memory rows

    @property
    def paths(self) -> list[Path]:
        return [self.org, self.sessions]

    @property
    def total_rows(self) -> int:
        return sum(self.rows.values())

    def importable(self, table: str) -> int:
        return self.rows[table] - self.rejected[table]

    @property
    def events(self) -> int:
        """Events a first full run appends: one per importable row, one per new session."""
        return sum(self.importable(t) for t in self.rows) + len(self.session_ids)


class _Defects:
    """Which row indices of a table get which defect (disjoint, deterministic)."""

    def __init__(self, rng: random.Random, n: int, kinds: dict[str, int]) -> None:
        chosen = rng.sample(range(n), sum(kinds.values()))
        self.at: dict[int, str] = {}
        for kind, count in kinds.items():
            for _ in range(count):
                self.at[chosen.pop()] = kind

    def get(self, i: int) -> str | None:
        return self.at.get(i)


def _few(n: int, per: int = 300) -> int:
    return max(1, n // per)


def _sizes(rows: int) -> dict[str, int]:
    return {t: max(MIN_ROWS, round(rows * share)) for t, share in SHARES.items()}


class _Writer:
    def __init__(self, rng: random.Random, result: GeneratedLegacy, sizes: dict[str, int]):
        self.rng, self.result, self.sizes = rng, result, sizes
        sessions = max(3, sizes["call_graph_memory"] // 25)
        self.session_pool = [f"sess-{i:05d}" for i in range(sessions)]

    def _count(
        self, table: str, defects: _Defects, warn: Sequence[str], fine: Sequence[str] = ()
    ) -> None:
        """Record the expectations: ``warn`` kinds import with a warning, ``fine`` kinds are
        merely unusual, every other kind is rejected."""
        self.result.rows[table] = self.sizes[table]
        kinds = list(defects.at.values())
        self.result.warnings[table] = sum(1 for k in kinds if k in warn)
        self.result.rejected[table] = sum(1 for k in kinds if k not in warn and k not in fine)

    def _when(self, i: int) -> str:
        return f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"

    def decisions(self, db: sqlite3.Connection) -> None:
        n, rng = self.sizes["decisions"], self.rng
        db.execute(
            "CREATE TABLE decisions (id INTEGER PRIMARY KEY, decision TEXT, decision_type TEXT, "
            "confidence REAL, rationale TEXT, agent TEXT, session_id TEXT, created_at TEXT, "
            "alternatives TEXT, legacy_flag INTEGER)"
        )
        kinds = ("null", "blank", "nul", "utf8", "long", "word", "range")
        defects = _Defects(rng, n, {k: _few(n) for k in kinds})
        rows: list[tuple[Any, ...]] = []
        for i in range(n):
            comp, tech, alt = rng.choice(COMPONENTS), rng.choice(TECH), rng.choice(TECH)
            text: Any = f"Use {tech} for the {comp} service ({i})"
            rationale = (
                f"{tech} gives {rng.choice(QUALITIES)}; {alt} was considered but needs "
                f"{rng.choice(QUALITIES)} we do not have."
            )
            conf: Any = rng.choice((round(rng.random(), 2), f"{rng.randint(40, 99)}%", "0.7", None))
            kind = defects.get(i)
            if kind == "null":
                text = None
            elif kind == "blank":
                text = "   "
            elif kind == "nul":
                rationale = "cut\x00here"
            elif kind == "utf8":
                text = b"caf\xe9 au lait \xff"
            elif kind == "long":
                text = "x" * 20_001
            elif kind == "word":
                conf = rng.choice(("high", "medium", "low"))
            elif kind == "range":
                conf = rng.choice((7.5, -1, "150%"))
            rows.append(
                (
                    i + 1,
                    text,
                    rng.choice(DECISION_TYPES),
                    conf,
                    rationale,
                    rng.choice(AGENTS),
                    rng.choice(self.session_pool),
                    self._when(i),
                    f"{alt}; do nothing",
                    rng.randint(0, 1),
                )
            )
        db.executemany("INSERT INTO decisions VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        # Bytes that are not UTF-8, stored as TEXT (what a careless legacy writer leaves behind).
        db.execute(
            "UPDATE decisions SET decision = CAST(decision AS TEXT) WHERE typeof(decision) = 'blob'"
        )
        self._count("decisions", defects, ("word", "range"))

    def error_solutions(self, db: sqlite3.Connection) -> None:
        n, rng = self.sizes["error_solutions"], self.rng
        # Schema drift: no ``language`` column.
        db.execute(
            "CREATE TABLE error_solutions (id INTEGER PRIMARY KEY, error_pattern TEXT, "
            "error_type TEXT, solution TEXT, success_count INTEGER, failure_count INTEGER, "
            "confidence REAL, created_at TEXT)"
        )
        defects = _Defects(
            rng, n, {"null_error": _few(n), "null_solution": _few(n), "count": _few(n)}
        )
        rows: list[tuple[Any, ...]] = []
        for i in range(n):
            err, comp = rng.choice(ERRORS), rng.choice(COMPONENTS)
            error: Any = f"{err}: {comp} worker {i} failed after {rng.randint(1, 30)}s"
            solution: Any = f"Retry {comp} with backoff and check {rng.choice(TECH)} settings"
            successes: Any = rng.randint(0, 40)
            kind = defects.get(i)
            if kind == "null_error":
                error = None
            elif kind == "null_solution":
                solution = None
            elif kind == "count":
                successes = "many"
            rows.append(
                (
                    i + 1,
                    error,
                    err,
                    solution,
                    successes,
                    rng.randint(0, 5),
                    rng.random(),
                    self._when(i),
                )
            )
        db.executemany("INSERT INTO error_solutions VALUES (?,?,?,?,?,?,?,?)", rows)
        self._count("error_solutions", defects, ("count",))

    def skill_learnings(self, db: sqlite3.Connection) -> None:
        n, rng = self.sizes["skill_learnings"], self.rng
        # Schema drift: no ``confidence`` column; created_at sometimes an epoch integer.
        db.execute(
            "CREATE TABLE skill_learnings (id INTEGER PRIMARY KEY, skill_name TEXT, learning TEXT, "
            "category TEXT, session_id TEXT, created_at TEXT)"
        )
        defects = _Defects(rng, n, {"null": _few(n)})
        rows: list[tuple[Any, ...]] = []
        for i in range(n):
            tech = rng.choice(TECH)
            learning = (
                None
                if defects.get(i)
                else (
                    f"With {tech}, {rng.choice(VERBS)} {rng.choice(COMPONENTS)} data in batches "
                    f"({i})"
                )
            )
            created: Any = self._when(i) if i % 3 else 1_700_000_000 + i
            rows.append(
                (
                    i + 1,
                    f"{tech.lower()}-usage",
                    learning,
                    rng.choice(("pattern", "pitfall")),
                    rng.choice(self.session_pool),
                    created,
                )
            )
        db.executemany("INSERT INTO skill_learnings VALUES (?,?,?,?,?,?)", rows)
        self._count("skill_learnings", defects, ())

    def org(self, path: Path) -> None:
        with sqlite3.connect(path) as db:
            self.decisions(db)
            self.error_solutions(db)
            self.skill_learnings(db)
        db.close()

    def functions(
        self, db: sqlite3.Connection
    ) -> tuple[list[tuple[str, str, str | None, str]], int]:
        """Returns the importable functions (id, name, class, file) and the worker count."""
        n, rng = self.sizes["call_graph_functions"], self.rng
        # Schema drift: an extra ``complexity`` column.
        db.execute(
            "CREATE TABLE call_graph_functions (node_id TEXT PRIMARY KEY, name TEXT, "
            "file_path TEXT, start_line INTEGER, end_line INTEGER, language TEXT, signature TEXT, "
            "docstring TEXT, class_name TEXT, complexity INTEGER)"
        )
        workers = max(2, n // 200)  # classes Worker{j}, each with run() and setup_{j}()
        plain = n - 2 * workers
        defects = _Defects(rng, plain, {"null_name": _few(n), "null_id": _few(n), "line": _few(n)})
        rows: list[tuple[Any, ...]] = []
        good: list[tuple[str, str, str | None, str]] = []
        for i in range(plain):
            file = f"src/pkg{i % 9}/module{i % 37}.py"
            name: Any = f"{rng.choice(VERBS)}_{rng.choice(COMPONENTS)}_{i}"
            cls = f"{rng.choice(COMPONENTS).title()}Service" if i % 5 == 0 else None
            node_id: Any = f"{file}::{cls + '.' if cls else ''}{name}"
            start: Any = 10 + i % 400
            kind = defects.get(i)
            if kind == "null_name":
                name = None
            elif kind == "null_id":
                node_id = None
            elif kind == "line":
                start = "n/a"
            if kind not in ("null_name", "null_id"):
                good.append((node_id, name, cls, file))
            rows.append(
                (
                    node_id,
                    name,
                    file,
                    start,
                    20 + i % 400,
                    "python",
                    f"def {name}(self, item)",
                    f"{str(name).replace('_', ' ').capitalize()}.",
                    cls,
                    rng.randint(1, 20),
                )
            )
        for j in range(workers):
            file = f"src/workers/worker{j}.py"
            for name in ("run", f"setup_{j}"):
                node_id = f"{file}::Worker{j}.{name}"
                rows.append(
                    (
                        node_id,
                        name,
                        file,
                        5,
                        30,
                        "python",
                        f"def {name}(self)",
                        None,
                        f"Worker{j}",
                        3,
                    )
                )
                good.append((node_id, name, f"Worker{j}", file))
        db.executemany("INSERT INTO call_graph_functions VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        self._count("call_graph_functions", defects, ("line",))
        return good, workers

    def edges(
        self, db: sqlite3.Connection, good: list[tuple[str, str, str | None, str]], workers: int
    ) -> None:
        n, rng = self.sizes["call_graph_edges"], self.rng
        db.execute(
            "CREATE TABLE call_graph_edges (caller_id TEXT, callee_name TEXT, call_line INTEGER, "
            "call_file TEXT, arguments TEXT)"
        )
        kinds = {
            "external": max(1, n // 20),
            "ambiguous": _few(n, 100),
            "bad_caller": _few(n, 200),
            "null_callee": _few(n),
            "self": max(1, n // 30),
            "qualified": max(1, n // 50),
            "line": _few(n),
        }
        defects = _Defects(rng, n, kinds)
        plain = [f for f in good if f[2] is None or not f[2].startswith("Worker")]
        rows: list[tuple[Any, ...]] = []
        for i in range(n):
            caller = rng.choice(plain)
            callee: Any = rng.choice(plain)[1]
            line: Any = 1 + i % 500
            kind = defects.get(i)
            caller_id: Any = caller[0]
            if kind == "external":
                callee = rng.choice(EXTERNAL_CALLS)
            elif kind == "ambiguous":
                callee = "run"  # several Worker classes have run(); the caller's file has none
            elif kind == "bad_caller":
                caller_id = f"src/gone.py::ghost_{i}"
            elif kind == "null_callee":
                callee = None
            elif kind == "self":
                j = rng.randrange(workers)
                caller = (
                    f"src/workers/worker{j}.py::Worker{j}.setup_{j}",
                    "",
                    "",
                    f"src/workers/worker{j}.py",
                )
                caller_id, callee = caller[0], "self.run"
            elif kind == "qualified":
                callee = f"Worker{rng.randrange(workers)}.run"
            elif kind == "line":
                line = "unknown"
            rows.append((caller_id, callee, line, caller[3], f"item_{i % 7}"))
        db.executemany("INSERT INTO call_graph_edges VALUES (?,?,?,?,?)", rows)
        self._count("call_graph_edges", defects, ("line",), ("self", "qualified"))
        self.result.unresolved = kinds["external"] + kinds["ambiguous"]

    def memory(self, db: sqlite3.Connection, good: list[tuple[str, str, str | None, str]]) -> None:
        n, rng = self.sizes["call_graph_memory"], self.rng
        db.execute(
            "CREATE TABLE call_graph_memory (node_id TEXT, message_id TEXT, session_id TEXT, "
            "change_type TEXT, timestamp TEXT)"
        )
        defects = _Defects(rng, n, {"null_session": _few(n), "unknown": _few(n)})
        rows: list[tuple[Any, ...]] = []
        for i in range(n):
            node_id = rng.choice(good)[0]
            session: str | None = rng.choice(self.session_pool)
            kind = defects.get(i)
            if kind == "null_session":
                session = None
            elif kind == "unknown":
                node_id = f"src/gone.py::ghost_{i}"
            elif session is not None:
                self.result.session_ids.add(session)
            rows.append(
                (
                    node_id,
                    f"msg-{i:06d}",
                    session,
                    rng.choice(("created", "modified", "read")),
                    self._when(i),
                )
            )
        db.executemany("INSERT INTO call_graph_memory VALUES (?,?,?,?,?)", rows)
        self._count("call_graph_memory", defects, ())

    def sessions(self, path: Path) -> None:
        with sqlite3.connect(path) as db:
            good, workers = self.functions(db)
            self.edges(db, good, workers)
            self.memory(db, good)
        db.close()


def generate(folder: Path, rows: int = 5000, seed: int = 7) -> GeneratedLegacy:
    """Write ``org.db`` and ``sessions.db`` with about ``rows`` rows in all into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    result = GeneratedLegacy(folder / "org.db", folder / "sessions.db")
    for path in result.paths:
        path.unlink(missing_ok=True)
    writer = _Writer(random.Random(seed), result, _sizes(rows))
    writer.org(result.org)
    writer.sessions(result.sessions)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    result = generate(args.out, args.rows, args.seed)
    for table, count in result.rows.items():
        print(
            f"{table}: {count} rows, {result.rejected[table]} to be rejected, "
            f"{result.warnings[table]} with warnings"
        )
    print(f"unresolved calls: {result.unresolved}; sessions: {len(result.session_ids)}")
    print(" ".join(str(p) for p in result.paths))


if __name__ == "__main__":
    main()
