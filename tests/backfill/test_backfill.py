"""Backfill of a generated legacy database, end to end against a real PostgreSQL: counts,
provenance, broken rows reported with their reasons, idempotent reruns, dry runs."""

from __future__ import annotations

import re
from collections import Counter

from backfill.generate import GeneratedLegacy
from backfill.importer import BackfillOptions, run_backfill
from backfill.report import BackfillReport
from kg.config import Scope
from kg.events import EventStore, RecordedEvent
from kg.runtime import Runtime

SOURCE = re.compile(r"^(org|sessions)\.db/[a-z_]+#.+$")


async def all_events(store: EventStore, scope: Scope) -> list[RecordedEvent]:
    events: list[RecordedEvent] = []
    while batch := await store.read_all(events[-1].position if events else 0, scope=scope):
        events += batch
    return events


def assert_matches_generator(report: BackfillReport, legacy: GeneratedLegacy) -> None:
    for table, rows in legacy.rows.items():
        label = (
            "org.db"
            if table in ("decisions", "error_solutions", "skill_learnings")
            else ("sessions.db")
        )
        t = report.table(label, table)
        assert t.rows == rows, table
        assert len(t.rejected) == legacy.rejected[table], (table, t.rejected)
        assert len(t.warnings) == legacy.warnings[table], (table, t.warnings)
        assert t.imported + t.already + len(t.rejected) == rows, "no row silently dropped"
    assert sum(t.unresolved for t in report.tables) == legacy.unresolved


async def test_backfill_imports_every_good_row_with_provenance(
    runtime: Runtime, scope: Scope, legacy: GeneratedLegacy
) -> None:
    report = await run_backfill(runtime.store, scope, legacy.paths)
    assert_matches_generator(report, legacy)
    for table in legacy.rows:
        assert sum(t.imported for t in report.tables if t.table == table) == legacy.importable(
            table
        )

    events = await all_events(runtime.store, scope)
    assert len(events) == legacy.events == report.total("events")
    sources = [e.metadata["source"] for e in events]
    assert all(SOURCE.match(s) for s in sources)
    # One event per row, plus a Session node asserted with the first memory row of a session.
    per_source = Counter(sources)
    assert sum(n - 1 for n in per_source.values()) == len(legacy.session_ids)

    first = next(e for e in events if e.metadata["source"] == "org.db/decisions#1")
    assert first.event_type == "DecisionRecorded", "the event record_decision writes live"
    assert first.payload["decision_id"] == "org-1"
    assert first.stream_id == "backfill:org.db/decisions"
    assert first.actor != "kg backfill", "the legacy author column names the actor"
    assert first.metadata["session_id"].startswith("sess-")

    types = Counter(e.event_type for e in events)
    assert types["DecisionRecorded"] == legacy.importable("decisions")
    assert types["EdgeAsserted"] == legacy.importable("call_graph_edges") + legacy.importable(
        "call_graph_memory"
    )


async def test_broken_rows_are_reported_with_their_reason(
    runtime: Runtime, scope: Scope, legacy: GeneratedLegacy
) -> None:
    report = await run_backfill(runtime.store, scope, legacy.paths)
    reasons = "\n".join(f"{r.where}: {r.reason}" for r in report.rejected)
    for expected in (
        "decision is NULL",
        "decision is empty",
        "rationale contains a NUL character",
        "decision is not valid UTF-8",
        "at most 20000 characters",
        "error_pattern is NULL",
        "solution is NULL",
        "learning is NULL",
        "name is NULL",
        "node_id is NULL",
        "is not a known function",
        "is ambiguous",
        "caller_id 'src/gone.py::ghost_",
        "callee_name is NULL",
        "session_id is NULL",
        "node_id 'src/gone.py::ghost_",
    ):
        assert expected in reasons, expected
    warnings = "\n".join(w.reason for w in report.warnings)
    for expected in ("is not a number", "is outside 0..1", "start_line 'n/a'"):
        assert expected in warnings, expected
    notes = report.table("org.db", "error_solutions").notes
    assert any("optional columns absent" in n and "language" in n for n in notes)
    assert any("complexity" in n for n in report.table("sessions.db", "call_graph_functions").notes)


async def test_rerun_imports_nothing_new(
    runtime: Runtime, scope: Scope, legacy: GeneratedLegacy
) -> None:
    await run_backfill(runtime.store, scope, legacy.paths, BackfillOptions(chunk_size=700))
    count = await runtime.store.count(scope)
    again = await run_backfill(runtime.store, scope, legacy.paths)
    assert again.total("imported") == 0 and again.total("events") == 0
    assert again.total("already") == sum(legacy.importable(t) for t in legacy.rows)
    assert len(again.rejected) == sum(legacy.rejected.values()), "still reported, every time"
    assert await runtime.store.count(scope) == count


async def test_dry_run_writes_nothing_and_counts_what_a_run_would(
    runtime: Runtime, scope: Scope, legacy: GeneratedLegacy
) -> None:
    dry = await run_backfill(runtime.store, scope, legacy.paths, BackfillOptions(dry_run=True))
    assert await runtime.store.count(scope) == 0
    real = await run_backfill(runtime.store, scope, legacy.paths)
    for d, r in zip(dry.tables, real.tables, strict=True):
        assert (d.rows, d.imported, d.events, len(d.rejected)) == (
            r.rows,
            r.imported,
            r.events,
            len(r.rejected),
        )
    after = await run_backfill(runtime.store, scope, legacy.paths, BackfillOptions(dry_run=True))
    assert after.total("imported") == 0


async def test_projected_graph_has_resolved_calls_and_session_links(
    runtime: Runtime, scope: Scope, legacy: GeneratedLegacy
) -> None:
    await run_backfill(runtime.store, scope, legacy.paths)
    await runtime.catch_up()
    nodes = dict(
        await runtime.system_pool.fetch(
            "SELECT node_type, count(*) FROM kg_nodes WHERE tenant_id = $1 GROUP BY 1",
            scope.tenant_id,
        )
    )
    assert nodes["Decision"] == legacy.importable("decisions")
    assert nodes["ErrorSolution"] == legacy.importable("error_solutions")
    assert nodes["SkillLearning"] == legacy.importable("skill_learnings")
    assert nodes["Function"] == legacy.importable("call_graph_functions")
    assert nodes["Session"] == len(legacy.session_ids)
    # self.run inside Worker0 resolves to Worker0.run, not to another Worker's run().
    own = await runtime.system_pool.fetch(
        "SELECT from_node, to_node FROM kg_edges WHERE edge_type = 'CALLS' "
        "AND properties->>'callee_name' = 'self.run'"
    )
    assert own and all(
        a.split("::")[1].split(".")[0] == b.split("::")[1].split(".")[0] for a, b in own
    )
    dangling = await runtime.system_pool.fetchval(
        "SELECT count(*) FROM kg_edges e WHERE NOT EXISTS (SELECT 1 FROM kg_nodes n "
        "WHERE n.node_id = e.to_node) OR NOT EXISTS (SELECT 1 FROM kg_nodes n "
        "WHERE n.node_id = e.from_node)"
    )
    assert dangling == 0, "CALLS and RECORDED_IN edges only join imported nodes"
    linked = await runtime.system_pool.fetchval(
        "SELECT count(DISTINCT to_node) FROM kg_edges WHERE edge_type = 'RECORDED_IN'"
    )
    assert linked == len(legacy.session_ids)
