"""``kg backfill`` as an operator runs it: dry run, real run, and a run killed midway."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from backfill.generate import GeneratedLegacy
from kg.config import Scope
from kg.events import EventStore
from tests.support import assert_log_verifies, cli_env, kg


@pytest.fixture
def env(db_url: str) -> dict[str, str]:
    return cli_env(db_url)


TABLE_LINE = re.compile(r"^((?:org|sessions)\.db/[a-z_]+)\s+(.*)$")


def counts(stdout: str) -> dict[str, list[str]]:
    """The per-table lines of the report: name -> [rows, imported, already, rejected, ...]."""
    return {
        m.group(1): m.group(2).split()
        for m in map(TABLE_LINE.match, stdout.splitlines())
        if m is not None
    }


def start_killable_backfill(
    paths: list[str], env: dict[str, str], cwd: Path
) -> subprocess.Popen[str]:
    """Small chunks and a long pause after each commit: a kill lands between chunks, midway."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kg.cli",
            "backfill",
            *paths,
            "--chunk-size",
            "100",
            "--pause",
            "60",
            "--no-catch-up",
        ],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_dry_run_then_run_print_the_same_counts(
    env: dict[str, str], tmp_path: Path, legacy: GeneratedLegacy, store: EventStore, scope: Scope
) -> None:
    paths = [str(p) for p in legacy.paths]
    dry = kg("backfill", *paths, "--dry-run", env=env, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "DRY RUN: nothing was written" in dry.stdout and "would import" in dry.stdout
    assert await store.count(scope) == 0

    report = tmp_path / "rejected.jsonl"
    real = kg("backfill", *paths, "--show", "5", "--report", str(report), env=env, cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    assert counts(real.stdout) == counts(dry.stdout)
    decisions = counts(real.stdout)["org.db/decisions"]
    assert decisions[:4] == [
        str(legacy.rows["decisions"]),
        str(legacy.importable("decisions")),
        "0",
        str(legacy.rejected["decisions"]),
    ]
    assert f"rows not imported: {sum(legacy.rejected.values())} (first 5;" in real.stdout
    assert "projections caught up" in real.stdout
    listed = report.read_text().splitlines()
    assert len(listed) == sum(legacy.rejected.values()) + sum(legacy.warnings.values())
    assert await store.count(scope) == legacy.events


async def test_a_run_killed_midway_is_finished_by_the_rerun_without_duplicates(
    env: dict[str, str], tmp_path: Path, legacy: GeneratedLegacy, store: EventStore, scope: Scope
) -> None:
    paths = [str(p) for p in legacy.paths]
    proc = start_killable_backfill(paths, env, tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and not line.startswith("committed "):
            line = proc.stderr.readline()
        assert line.startswith("committed org.db/decisions: 100 rows"), line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    partial = await store.count(scope)
    assert 0 < partial < legacy.events

    rerun = kg("backfill", *paths, env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    decisions = counts(rerun.stdout)["org.db/decisions"]
    assert decisions[1:3] == [str(legacy.importable("decisions") - 100), "100"]
    events = []
    while batch := await store.read_all(events[-1].position if events else 0, scope=scope):
        events += batch
    assert len(events) == legacy.events
    row_events = [e for e in events if e.payload.get("node_type") != "Session"]
    sources = [e.metadata["source"] for e in row_events]
    assert len(sources) == len(set(sources)), "no row imported twice"
    sessions = [e.payload["node_id"] for e in events if e.payload.get("node_type") == "Session"]
    assert len(sessions) == len(set(sessions)) == len(legacy.session_ids)

    again = kg("backfill", *paths, env=env, cwd=tmp_path)
    assert again.returncode == 0 and await store.count(scope) == legacy.events


async def test_a_second_backfill_of_the_same_file_stops_with_a_conflict(
    env: dict[str, str],
    tmp_path: Path,
    legacy: GeneratedLegacy,
    store: EventStore,
    system_store: EventStore,
    scope: Scope,
) -> None:
    """Two real backfills of one file with the same chunk size: the second must not run beside
    the first (it used to, its chunks matching the first's by idempotency key), but stop at
    once with one line saying why and that a rerun resumes."""
    org = str(legacy.paths[0])
    assert org.endswith("org.db")
    first = start_killable_backfill([org], env, tmp_path)
    try:
        assert first.stderr is not None
        seen = [first.stderr.readline()]
        while seen[-1] and not seen[-1].startswith("committed "):
            seen.append(first.stderr.readline())
        assert seen[-1].startswith("committed org.db/decisions: 100 rows"), "".join(seen)
        before = await store.count(scope)

        second = kg("backfill", org, "--chunk-size", "100", "--no-catch-up", env=env, cwd=tmp_path)
        assert second.returncode == 1, second.stdout
        message = [x for x in second.stderr.splitlines() if x.strip()]
        assert len(message) == 1, second.stderr
        assert "another backfill of org.db" in message[0] and "rerun" in message[0].lower()
        assert await store.count(scope) == before, "the second run wrote nothing"

        other_file = kg("backfill", str(legacy.paths[1]), "--no-catch-up", env=env, cwd=tmp_path)
        assert other_file.returncode == 0, "another file is not blocked: " + other_file.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()

    rerun = kg("backfill", org, "--no-catch-up", env=env, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert counts(rerun.stdout)["org.db/decisions"][1:3] == [
        str(legacy.importable("decisions") - 100),
        "100",
    ]
    assert await store.count(scope) == legacy.events
    await assert_log_verifies(system_store, [scope.tenant_id])  # two writers ran side by side


def progress_lines(stderr: str, label: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(f"{label}: ")]


async def test_backfill_catch_up_rebuild_and_replay_show_progress(
    env: dict[str, str], tmp_path: Path, legacy: GeneratedLegacy, store: EventStore, scope: Scope
) -> None:
    """With stderr not a terminal, each long command prints plain progress lines (every
    KG_PROGRESS_SECONDS; 0 here: every change) and a last one with the totals."""
    plain = {**env, "KG_PROGRESS_SECONDS": "0"}
    paths = [str(p) for p in legacy.paths]
    imported = kg("backfill", *paths, "--no-catch-up", env=plain, cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    rows = progress_lines(imported.stderr, "backfill")
    assert rows, imported.stderr
    imported_rows = sum(legacy.importable(t) for t in legacy.rows)
    counted = re.match(r"backfill: rows imported ([\d,]+)", rows[-1])
    assert counted is not None, rows[-1]
    assert int(counted.group(1).replace(",", "")) >= imported_rows
    assert "committed org.db/decisions:" in imported.stderr, "the per-table lines stay"

    caught = kg("projections", "catch-up", env=plain, cwd=tmp_path)
    assert caught.returncode == 0, caught.stderr
    events = legacy.events
    last = progress_lines(caught.stderr, "catch-up")[-1]
    assert f"events projected {events:,}/{events:,}" in last, last
    assert "texts embedded" in last and "elapsed" in last

    rebuilt = kg("projections", "rebuild", "kg_edges", env=plain, cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert f"events projected (kg_edges) {events:,}/{events:,}" in rebuilt.stderr

    replayed = kg("audit", "replay", "--until", "100", env=plain, cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    # A replay runs kg_nodes in a lane of its own, as a rebuild does: one counter per lane.
    assert "events projected (kg_nodes) 100/100" in replayed.stderr
    assert "events projected (kg_edges, context_graphs, context_graph_usage) 100/100" in (
        replayed.stderr
    )
    assert await store.count(scope) == events
