"""``watch_project`` (``kg watch``) in-process with a stop event, on a real git working tree
and the real PostgreSQL: saves, removals and commits reach the graph. Waits poll; nothing
asserts how long anything took (that is bench/bench_watch.py's job)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from kg.config import Scope
from kg.graph_queries import query_knowledge_graph
from kg.ingest.watch import batch_paths, relevant, watch_project
from kg.ingest.worktree import WorktreeReport
from kg.runtime import Runtime
from tests.ingest.gitrepo import Repo

DEADLINE = 60.0  # seconds before a wait gives up (a failure, not a measurement)


async def found(runtime: Runtime, text: str) -> list[str]:
    results = await query_knowledge_graph(runtime, text, mode="fulltext")
    return [h.node_id for h in results.results]


async def eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while not await check():
        if loop.time() > end:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.1)


@pytest.fixture
async def watching(
    runtime: Runtime, tmp_path: Path
) -> AsyncIterator[tuple[Repo, list[WorktreeReport]]]:
    """A watcher over ``tmp_path`` (a git repository with one committed spec), running until
    the test ends; yields the repository and the reports of its passes, the first one done."""
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n\nThe first text.\n")
    repo.commit("specs")
    reports: list[WorktreeReport] = []
    stop = asyncio.Event()
    task = asyncio.create_task(
        watch_project(runtime, stop=stop, on_pass=reports.append, on_error=print)
    )

    async def first_pass() -> bool:
        if task.done():
            task.result()
        return bool(reports)

    await eventually(first_pass, "the first pass")  # watching began before it
    yield repo, reports
    stop.set()
    await asyncio.wait_for(task, DEADLINE)


async def test_a_save_an_addition_and_a_removal_reach_the_graph(
    watching: tuple[Repo, list[WorktreeReport]], runtime: Runtime, tmp_path: Path
) -> None:
    (tmp_path / "docs/a.md").write_text("# A\n\nNow about axolotls.\n", encoding="utf-8")

    async def saved() -> bool:
        return await found(runtime, "axolotls") == ["section:docs/a.md#a"]

    await eventually(saved, "the saved edit is searchable")
    passes = len(watching[1])

    (tmp_path / "docs/b.md").write_text("# B\n\nA new file on capybaras.\n", encoding="utf-8")
    (tmp_path / "docs/a.md").unlink()

    async def added_and_removed() -> bool:
        return await found(runtime, "capybaras") == ["section:docs/b.md#b"] and not (
            await found(runtime, "axolotls")
        )

    await eventually(added_and_removed, "the new file is in and the removed one out")

    # A pass of its own: the changes came after the save's pass (which may have been the first
    # pass too, when the save landed while the watcher was starting on a loaded machine). Its
    # report is listed once the pass returns, just after what it wrote became searchable.
    async def reported() -> bool:
        return len(watching[1]) > passes

    await eventually(reported, "a pass per batch")


async def test_a_commit_seen_by_the_watcher_records_the_committed_state(
    watching: tuple[Repo, list[WorktreeReport]], runtime: Runtime, scope: Scope, tmp_path: Path
) -> None:
    repo = watching[0]
    (tmp_path / "docs/a.md").write_text("# A\n\nPelicans, uncommitted.\n", encoding="utf-8")

    async def saved() -> bool:
        return bool(await found(runtime, "pelicans"))

    await eventually(saved, "the save is searchable")
    before = await runtime.store.last_position(scope)
    sha = repo.commit("pelicans")

    async def recorded() -> bool:
        events = await runtime.store.read_all(before, scope=scope)
        return f"docs/a.md@{sha}" in {str(e.metadata.get("source")) for e in events}

    await eventually(recorded, "the commit's state is recorded")


def test_the_filter_keeps_specs_sources_policies_and_git_moves_only(tmp_path: Path) -> None:
    keep = relevant(tmp_path, ".kg/policies")
    root = str(tmp_path.resolve())
    kept = {
        rel
        for rel in (
            "docs/a.md",
            "src/app.py",
            "notes.txt",
            ".kg/policies/p.yaml",
            ".kg/schema.yaml",
            ".kg/pgdata/base/1",
            ".kg/sync-state.json",
            ".gitignore",
            "sub/.kgignore",
            ".git/objects/ab/cdef",
            ".git/refs/heads/main",
            ".git/refs/heads/main.lock",
            ".git/logs/HEAD",
        )
        if keep(None, f"{root}/{rel}")
    }
    assert kept == {
        "docs/a.md",
        "src/app.py",
        ".kg/policies/p.yaml",
        ".kg/schema.yaml",
        ".gitignore",
        "sub/.kgignore",
        ".git/refs/heads/main",
        ".git/logs/HEAD",
    }
    assert batch_paths(tmp_path, [f"{root}/docs/a.md", f"{root}/.git/logs/HEAD"]) == ["docs/a.md"]
