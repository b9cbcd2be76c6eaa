"""``sync_worktree`` (``kg sync --worktree``) over real git working trees and the real
PostgreSQL: uncommitted edits, additions and removals reach the graph, marked as working-tree
state, and the commit's sync later records the committed state."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from kg.config import Scope
from kg.errors import PolicyFilesError
from kg.graph_queries import query_knowledge_graph
from kg.ingest.service import sync_project
from kg.ingest.worktree import sync_worktree
from kg.runtime import Runtime
from tests.ingest.gitrepo import Repo


async def found(runtime: Runtime, text: str) -> list[str]:
    results = await query_knowledge_graph(runtime, text, mode="fulltext")
    return [h.node_id for h in results.results]


async def doc_sources(runtime: Runtime, scope: Scope, stream: str, after: int) -> list[str]:
    events = await runtime.store.read_all(after, scope=scope)
    return [str(e.metadata["source"]) for e in events if e.stream_id == stream]


async def kg_source(pool: asyncpg.Pool, scope: Scope, node_id: str) -> dict[str, object]:
    raw = await pool.fetchval(
        "SELECT properties -> 'kg_source' FROM kg_nodes WHERE tenant_id = $1 "
        "AND project_id = $2 AND node_id = $3",
        scope.tenant_id,
        scope.project_id,
        node_id,
    )
    value = json.loads(raw) if isinstance(raw, str) else raw
    assert isinstance(value, dict)
    return value


async def test_an_uncommitted_edit_is_searchable_after_a_worktree_pass_and_the_commit_is_recorded(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# Payments\n\nCards are charged at checkout.\n")
    repo.commit("specs")
    await sync_project(runtime)
    repo.write(
        "docs/a.md",
        "# Payments\n\nCards are charged at checkout.\n\n## Refunds\n\nA "
        "zeppelin refund is issued within five days.\n",
    )

    assert await found(runtime, "zeppelin") == [], "not visible before the pass"
    before = await runtime.store.last_position(scope)
    report = await sync_worktree(runtime)

    assert report.paths == ["docs/a.md"]
    assert "section:docs/a.md#refunds" in await found(runtime, "zeppelin")
    sources = await doc_sources(runtime, scope, "doc:docs/a.md", before)
    assert sources and all(s.startswith("docs/a.md@sha256:") for s in sources)
    marked = await kg_source(system_pool, scope, "document:docs/a.md")
    assert marked["worktree"] is True

    again = await sync_worktree(runtime)
    assert again.ingest is not None and again.ingest.events == 0, "an unchanged edit is skipped"

    sha = repo.commit("refunds")
    before = await runtime.store.last_position(scope)
    synced = await sync_project(runtime)

    assert synced.mode == "incremental" and synced.ingest is not None
    assert synced.ingest.changed == ["docs/a.md"], "the committed state is recorded"
    assert await doc_sources(runtime, scope, "doc:docs/a.md", before) == [f"docs/a.md@{sha}"]
    assert "worktree" not in await kg_source(system_pool, scope, "document:docs/a.md")
    assert "section:docs/a.md#refunds" in await found(runtime, "zeppelin")


async def test_added_and_removed_files_and_a_reverted_edit_follow_the_working_tree(
    runtime: Runtime, tmp_path: Path
) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/keep.md", "# Keep\n\nThe original wording of kestrel.\n")
    repo.write("docs/gone.md", "# Gone\n\nA note about marmosets.\n")
    repo.commit("specs")
    await sync_worktree(runtime)
    assert await found(runtime, "marmosets") == ["section:docs/gone.md#gone"]

    (tmp_path / "docs/gone.md").unlink()
    repo.write("docs/new.md", "# New\n\nAn untracked spec about quokkas.\n")
    repo.write("docs/keep.md", "# Keep\n\nAn edited wording of kestrel and lemurs.\n")
    report = await sync_worktree(runtime)

    assert report.ingest is not None and report.ingest.removed == ["docs/gone.md"]
    assert await found(runtime, "marmosets") == [], "a removed file leaves the graph"
    assert await found(runtime, "quokkas") == ["section:docs/new.md#new"]
    assert await found(runtime, "lemurs") == ["section:docs/keep.md#keep"]

    repo.git("checkout", "--", "docs/keep.md", "docs/gone.md")  # invisible to git status
    (tmp_path / "docs/new.md").unlink()
    await sync_worktree(runtime)

    assert await found(runtime, "lemurs") == [], "the reverted edit is gone"
    assert await found(runtime, "marmosets") == ["section:docs/gone.md#gone"], "restored"
    assert await found(runtime, "quokkas") == []


async def test_ignored_files_are_left_out_and_a_broken_policy_file_stops_the_pass(
    runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    repo = Repo(tmp_path)
    repo.write(".gitignore", "scratch/\n")
    repo.write(".kgignore", "private.md\n")
    repo.write("docs/a.md", "# A\n")
    repo.commit("specs")
    await sync_worktree(runtime)
    repo.write("scratch/notes.md", "# Notes\n\nIgnored by git: wombats.\n")
    repo.write("private.md", "# Private\n\nIgnored by kg: wombats.\n")
    repo.write("docs/b.md", "# B\n\nNot ignored: wombats.\n")

    await sync_worktree(runtime)
    assert await found(runtime, "wombats") == ["section:docs/b.md#b"]

    repo.write(".kg/policies/bad.yaml", "policies:\n  - {id: x, effect: forbid, labels: [a]}\n")
    repo.write("docs/c.md", "# C\n\nWritten while a policy is broken: narwhals.\n")
    before = await runtime.store.last_position(scope)
    with pytest.raises(PolicyFilesError, match=r"\.kg/policies/bad\.yaml:2"):
        await sync_worktree(runtime)

    assert await runtime.store.last_position(scope) == before, "nothing appended"
    assert await found(runtime, "narwhals") == []
