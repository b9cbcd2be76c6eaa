"""Schema drift in hand-made legacy tables: aliases, missing and extra columns, NULLs, text in
numeric columns, duplicate ids; and a backfilled decision's lineage reaching its legacy row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from backfill.importer import run_backfill
from kg.config import Scope
from kg.errors import ValidationError
from kg.lineage import trace_decision_lineage
from kg.runtime import Runtime


def make_db(path: Path, *statements: str) -> Path:
    with sqlite3.connect(path) as db:
        for sql in statements:
            db.execute(sql)
    db.close()
    return path


async def test_drifted_tables_are_read_through_aliases_and_reported_by_row(
    runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    org = make_db(
        tmp_path / "org.db",
        # ``decision_text`` instead of ``decision``, no rationale, an extra column, no primary
        # key (so ids can repeat), text in the numeric column.
        "CREATE TABLE decisions (id, decision_text TEXT, confidence REAL, owner_team TEXT)",
        "INSERT INTO decisions VALUES (1, 'Adopt trunk-based development', '0.9', 'core')",
        "INSERT INTO decisions VALUES (2, 'Pin dependencies', 'very high', NULL)",
        "INSERT INTO decisions VALUES (2, 'Duplicate of two', 0.5, NULL)",
        "INSERT INTO decisions VALUES (NULL, 'No id', 0.5, NULL)",
        "INSERT INTO decisions VALUES ('a b', 'Bad id', 0.5, NULL)",
        # A required column missing altogether: every row reported.
        "CREATE TABLE error_solutions (id INTEGER PRIMARY KEY, error_pattern TEXT)",
        "INSERT INTO error_solutions (error_pattern) VALUES ('KeyError'), ('ValueError')",
    )
    report = await run_backfill(runtime.store, scope, [org])

    decisions = report.table("org.db", "decisions")
    assert (decisions.rows, decisions.imported) == (5, 2)
    reasons = {r.where: r.reason for r in decisions.rejected}
    assert reasons["org.db/decisions#2 (rowid 3)"] == "duplicate id '2': rowid 2 has it"
    assert reasons["org.db/decisions rowid 4"] == "id is NULL"
    assert "cannot be part of an id" in reasons["org.db/decisions#a b"]
    assert [w.reason for w in decisions.warnings] == [
        "confidence 'very high' is not a number: imported without it"
    ]
    assert any("rationale" in n for n in decisions.notes), "absent optional columns are named"
    assert any("owner_team" in n and "not imported" in n for n in decisions.notes)

    errors = report.table("org.db", "error_solutions")
    assert errors.imported == 0 and len(errors.rejected) == 2
    assert all("required column solution or fix or resolution" in r.reason for r in errors.rejected)
    assert not report.table("org.db", "skill_learnings").present

    events = await runtime.store.read_all(0, scope=scope)
    assert [e.payload["confidence"] for e in events] == [0.9, None]


async def test_a_file_that_is_not_a_legacy_database_is_refused_before_writing(
    runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not sqlite at all " * 100)
    empty = make_db(tmp_path / "other.db", "CREATE TABLE t (x)")
    for path, message in (
        (text, "not a readable SQLite database"),
        (empty, "none of the legacy tables"),
        (tmp_path / "missing.db", "no such file"),
    ):
        with pytest.raises(ValidationError, match=message):
            await run_backfill(runtime.store, scope, [path])
    assert await runtime.store.count(scope) == 0


async def test_lineage_of_a_backfilled_decision_reaches_its_legacy_row(
    runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    org = make_db(
        tmp_path / "org.db",
        "CREATE TABLE decisions (id INTEGER PRIMARY KEY, decision TEXT, decision_type TEXT, "
        "confidence REAL, rationale TEXT, agent TEXT)",
        "INSERT INTO decisions VALUES (42, 'Use the payment gateway', 'architecture', 0.8, "
        "'PCI scope stays small', 'alice')",
    )
    await run_backfill(runtime.store, scope, [org])
    lineage = (await trace_decision_lineage(runtime, "org-42", "upstream", 3)).to_dict()
    steps = {s["id"]: s for s in lineage["steps"]}
    decision = steps["decision:org-42"]
    assert decision["actor"] == "alice"
    assert decision["details"]["source"] == "org.db/decisions#42"
    assert decision["details"]["decision_type"] == "architecture"
    assert steps["source:org.db/decisions#42"]["kind"] == "source"
    links = {(x["from_id"], x["relation"], x["to_id"]) for x in lineage["links"]}
    assert ("decision:org-42", "SOURCED_FROM", "source:org.db/decisions#42") in links
