"""``sync_project`` over real commits in a temporary git repository."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg

from kg.config import Scope, Settings
from kg.ingest.service import ingest_paths, sync_project
from kg.ingest.staged import lint_staged
from kg.runtime import Runtime
from tests.ingest.gitrepo import Repo


async def documents(pool: asyncpg.Pool, scope: Scope) -> set[str]:
    rows = await pool.fetch(
        "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND node_id LIKE 'document:%'",
        scope.tenant_id,
        scope.project_id,
    )
    return {r["node_id"].removeprefix("document:") for r in rows}


async def test_first_sync_is_full_then_only_changed_files_are_read(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n\n[b](b.md)\n")
    repo.write("docs/b.md", "# B\n")
    repo.write("docs/c.md", "# C\n")
    repo.write(".venv/tool.md", "# a virtual environment's file, not a spec\n")
    first_sha = repo.commit("specs")

    first = await sync_project(runtime)
    assert (first.mode, first.reason, first.to_commit) == (
        "full",
        "first sync of this database and scope",
        first_sha,
    )
    assert first.ingest is not None and len(first.ingest.changed) == 3
    assert await documents(system_pool, scope) == {"docs/a.md", "docs/b.md", "docs/c.md"}
    state = json.loads((tmp_path / ".kg/sync-state.json").read_text())
    assert [v["commit"] for v in state["synced"].values()] == [first_sha]

    assert (await sync_project(runtime)).mode == "up to date"

    repo.write("docs/a.md", "# A\n\nNo links any more.\n")
    (tmp_path / "docs/b.md").unlink()
    repo.git("mv", "docs/c.md", "docs/renamed.md")
    repo.write("notes.txt", "not Markdown")
    second_sha = repo.commit("edit, delete, rename")
    repo.write("docs/a.md", "# A\n\nNot committed yet.\n")  # the commit is synced, from disk

    before = await runtime.store.last_position(scope)
    second = await sync_project(runtime)
    assert (second.mode, second.from_commit, second.to_commit) == (
        "incremental",
        first_sha,
        second_sha,
    )
    assert second.paths == ["docs/a.md", "docs/b.md", "docs/c.md", "docs/renamed.md"]
    assert second.ingest is not None
    assert (second.ingest.changed, second.ingest.removed) == (
        ["docs/a.md", "docs/renamed.md"],
        ["docs/b.md", "docs/c.md"],
    )
    assert second.ingest.problems == [], "a deleted file that was ingested is not a problem"
    new = await runtime.store.read_all(before, scope=scope)
    assert {e.stream_id for e in new} == {
        "doc:docs/a.md",
        "doc:docs/b.md",
        "doc:docs/c.md",
        "doc:docs/renamed.md",
    }
    a_sources = {e.metadata["source"] for e in new if e.stream_id == "doc:docs/a.md"}
    assert len(a_sources) == 1 and a_sources.pop().startswith("docs/a.md@sha256:"), "dirty"
    renamed = {e.metadata["source"] for e in new if e.stream_id == "doc:docs/renamed.md"}
    assert renamed == {f"docs/renamed.md@{second_sha}"}
    assert await documents(system_pool, scope) == {"docs/a.md", "docs/renamed.md"}


async def test_full_scan_when_the_synced_commit_is_gone_or_the_schema_map_changed(
    runtime: Runtime, tmp_path: Path
) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n")
    repo.commit()
    await sync_project(runtime)

    state_file = tmp_path / ".kg/sync-state.json"
    state = json.loads(state_file.read_text())
    for entry in state["synced"].values():
        entry["commit"] = "0" * 40
    state_file.write_text(json.dumps(state))
    gone = await sync_project(runtime)
    assert gone.mode == "full"
    assert gone.reason == "the last synced commit 000000000000 is no longer in the repository"
    assert gone.ingest is not None and gone.ingest.unchanged == 1 and gone.ingest.events == 0

    repo.write("kg-schema.yaml", "rules:\n  - type: Note\n    paths: ['docs/*.md']\n")
    repo.commit("schema")
    retyped = await sync_project(runtime)
    assert (retyped.mode, retyped.reason) == ("full", "the schema map changed")
    assert retyped.ingest is not None and retyped.ingest.changed == ["docs/a.md"]


async def test_a_sync_state_the_database_does_not_bear_out_is_not_trusted(
    runtime: Runtime, tmp_path: Path
) -> None:
    """The state names the tenant's last event after the sync; a database without that event
    (here: the mark forged, as a restore from an older backup would leave it) gets a full scan,
    and so does an entry written before marks were kept."""
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n")
    repo.commit()
    await sync_project(runtime)
    state_file = tmp_path / ".kg/sync-state.json"
    state = json.loads(state_file.read_text())
    (entry,) = state["synced"].values()
    position, digest = entry["log"]["position"], entry["log"]["hash"]
    assert position == await runtime.store.last_position(runtime.scope) and len(digest) == 64
    assert (await sync_project(runtime)).mode == "up to date"

    entry["log"] = {"position": position, "hash": "f" * 64}
    state_file.write_text(json.dumps(state))
    forged = await sync_project(runtime)
    assert forged.mode == "full"
    assert "no longer holds the log" in forged.reason and f"position {position}" in forged.reason

    del entry["log"]
    state_file.write_text(json.dumps(state))
    old = await sync_project(runtime)
    assert (old.mode, old.reason) == ("full", "the sync state predates database checks")
    assert (await sync_project(runtime)).mode == "up to date"


async def test_outside_git_every_sync_is_a_cheap_full_scan(
    runtime: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "a.md").write_text("# A\n", encoding="utf-8")
    first = await sync_project(runtime)
    assert (first.mode, first.reason) == ("full", "not a git repository")
    second = await sync_project(runtime)
    assert second.ingest is not None
    assert (second.mode, second.ingest.unchanged, second.ingest.events) == ("full", 1, 0)
    (tmp_path / "a.md").unlink()
    third = await sync_project(runtime)
    assert third.ingest is not None and third.ingest.removed == ["a.md"]
    assert not (tmp_path / ".kg/sync-state.json").exists()


async def test_a_project_in_a_folder_of_the_repository_sees_paths_from_its_root(
    runtime: Runtime, tmp_path: Path, scope: Scope
) -> None:
    repo = Repo(tmp_path)
    root = tmp_path / "specs"
    repo.write("specs/docs/a.md", "# A\n")
    repo.write("elsewhere/x.md", "# X\n")
    repo.commit()
    rt = Runtime(
        Settings(runtime.settings.database_url, scope, root),
        runtime.url,
        runtime.app_pool,
        runtime.system_pool,
        runtime.embedder,
    )
    first = await sync_project(rt)
    assert first.ingest is not None and first.ingest.changed == ["docs/a.md"]

    repo.write("specs/docs/a.md", "# A\n\n[b](b.md#scope)\n")
    repo.write("specs/docs/b.md", "# B\n\n## Scope\n")
    repo.write("elsewhere/x.md", "# X changed\n")
    sha = repo.commit()
    second = await sync_project(rt)
    assert (second.mode, second.paths) == ("incremental", ["docs/a.md", "docs/b.md"])
    events = await rt.store.read_stream(scope, "doc:docs/a.md")
    assert events[-1].metadata["source"] == f"docs/a.md@{sha}", "clean, seen from the folder"

    repo.write("specs/docs/b.md", "# B\n\n## Out of scope\n")
    await ingest_paths(rt, ["docs/b.md"])
    events = await rt.store.read_stream(scope, "doc:docs/b.md")
    assert events[-1].metadata["source"].startswith("docs/b.md@sha256:"), "edited, not committed"
    repo.git("add", "-A")
    assert [str(p) for p in lint_staged(root)] == [
        "docs/a.md:3: dangling anchor (b.md#scope): no heading #scope in docs/b.md"
    ]
