"""``kg import memory FILE.jsonl``: a reference server's file into the log, with provenance,
idempotently, every line it cannot import reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kg.memory import read
from kg.memory.importer import import_memory
from kg.runtime import Runtime
from tests.mcp.client import server_env

LINES = [
    {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["likes tea"]},
    {"type": "entity", "name": "Acme", "entityType": "organization", "observations": []},
    {"type": "relation", "from": "Alice", "to": "Acme", "relationType": "works_at"},
    {"type": "relation", "from": "Alice", "to": "Nobody", "relationType": "knows"},
    {"type": "entity", "name": "Alice", "entityType": "person", "observations": ["runs"]},
    {"type": "entity", "entityType": "person"},
]


def memory_file(tmp_path: Path, lines: list[object], extra: str = "") -> Path:
    path = tmp_path / "memory.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + extra, encoding="utf-8")
    return path


async def test_import_with_provenance_then_again_appends_nothing(
    runtime: Runtime, tmp_path: Path
) -> None:
    path = memory_file(tmp_path, LINES, "\n{not json\n")
    report = await import_memory(runtime, path, actor="cli:test")
    assert (report.entities_created, report.relations_created) == (2, 1)
    assert report.observations_added == 1  # the second Alice line merges into the first
    assert [str(s) for s in report.skipped] == [
        "memory.jsonl:6: entity is invalid: field 'name': Field required",
        "memory.jsonl:7: not JSON (Expecting property name enclosed in double quotes)",
        "memory.jsonl:4: relation to 'Nobody': no such entity in the file or the graph (or a "
        "policy withholds it)",
    ]
    sources = await runtime.system_pool.fetch(
        "SELECT event_type, metadata->>'source' FROM kg_events "
        "WHERE stream_id LIKE 'memory:%' ORDER BY position"
    )
    assert [tuple(s) for s in sources] == [
        ("MemoryEntityCreated", "memory.jsonl:1"),
        ("MemoryEntityCreated", "memory.jsonl:2"),
        ("MemoryObservationsAdded", "memory.jsonl:5"),
        ("MemoryRelationCreated", "memory.jsonl:3"),
    ]
    graph = await read.open_nodes(runtime, ["Alice"])
    assert graph.entities[0]["observations"] == ["likes tea", "runs"]

    again = await import_memory(runtime, path, actor="cli:test")
    assert again.events == 0 and again.position is None
    assert again.unchanged == 4  # two entity lines (three with the merged one) and a relation

    grown = memory_file(tmp_path, [*LINES[:5], {**LINES[1], "observations": ["founded 1990"]}])
    third = await import_memory(runtime, grown, actor="cli:test")
    assert third.observations_added == 1 and third.events == 1


def test_the_command_imports_and_reports(runtime: Runtime, db_url: str, tmp_path: Path) -> None:
    path = memory_file(tmp_path, LINES[:3])
    env = server_env(db_url)
    done = subprocess.run(
        [sys.executable, "-m", "kg.cli", "import", "memory", str(path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 entities created, 0 observations added, 1 relations created" in done.stdout
    rerun = subprocess.run(
        [sys.executable, "-m", "kg.cli", "import", "memory", str(path)],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert "0 events appended" in rerun.stdout
