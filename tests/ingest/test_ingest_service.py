"""Ingestion against a real PostgreSQL: only changes are appended, removals retire nodes."""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from kg.config import Scope
from kg.errors import ConcurrencyConflictError
from kg.events import EventMetadata, NodeAsserted, NodeRetired
from kg.ingest import bulk, pipeline
from kg.ingest.service import ingest_paths
from kg.projections.digest import table_digest
from kg.projections.nodes import NodesProjection
from kg.projections.runner import ProjectionRunner
from kg.runtime import Runtime
from tests.ingest.gitrepo import Repo

PRD = """---
type: prd
owner: team-a
---
# Checkout PRD

## Goals

FR-1: pay with a saved card. NFR-2 bounds latency.

## Non-goals

Crypto.
"""

EPIC = """# Checkout epic

Delivers [the goals](../prd.md#goals), [the PRD](./../prd.md), [[prd#Non-goals]]
and [the same PRD](/docs/prd.md).

## Stories

- [Saved card](../stories/saved-card.md)
"""

STORY = """# Saved card

Part of [the epic](../epics/checkout.md). Mentions FR-1 and FR-7.
"""


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")


def project(root: Path) -> None:
    write(
        root,
        {"docs/prd.md": PRD, "docs/epics/checkout.md": EPIC, "docs/stories/saved-card.md": STORY},
    )


async def nodes(pool: asyncpg.Pool, scope: Scope) -> dict[str, dict[str, Any]]:
    rows = await pool.fetch(
        "SELECT node_id, node_type, name, content, properties, embedding IS NOT NULL AS vec "
        "FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2",
        scope.tenant_id,
        scope.project_id,
    )
    return {r["node_id"]: dict(r) for r in rows}


async def edges(pool: asyncpg.Pool, scope: Scope) -> set[tuple[str, str, str]]:
    rows = await pool.fetch(
        "SELECT from_node, edge_type, to_node FROM kg_edges "
        "WHERE tenant_id = $1 AND project_id = $2",
        scope.tenant_id,
        scope.project_id,
    )
    return {(r["from_node"], r["edge_type"], r["to_node"]) for r in rows}


async def test_ingest_projects_typed_nodes_and_links_with_canonical_ids(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    project(tmp_path)
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert sorted(report.changed) == [
        "docs/epics/checkout.md",
        "docs/prd.md",
        "docs/stories/saved-card.md",
    ]
    assert report.problems == [] and report.failed == []
    graph = await nodes(system_pool, scope)
    assert graph["document:docs/prd.md"]["node_type"] == "PRD"
    assert graph["document:docs/epics/checkout.md"]["node_type"] == "Epic"
    assert graph["document:docs/stories/saved-card.md"]["node_type"] == "Story"
    assert graph["section:docs/prd.md#goals"]["content"].startswith("FR-1: pay")
    # "FR-1: pay ..." opens a paragraph of the PRD: the PRD defines it.
    assert graph["requirement:docs/prd.md#FR-1"]["node_type"] == "Requirement"
    assert all(n["vec"] for n in graph.values()), "every node is embedded"
    source = graph["document:docs/prd.md"]["properties"]["kg_source"]
    assert source["path"] == "docs/prd.md" and len(source["fingerprint"]) == 64
    assert graph["document:docs/prd.md"]["properties"]["owner"] == "team-a"

    links = await edges(system_pool, scope)
    epic = "section:docs/epics/checkout.md#checkout-epic"
    # ../prd.md, ./../prd.md and /docs/prd.md are one node; the wiki link finds the section.
    assert (epic, "REFERENCES", "document:docs/prd.md") in links
    assert (epic, "REFERENCES", "section:docs/prd.md#goals") in links
    assert (epic, "REFERENCES", "section:docs/prd.md#non-goals") in links
    assert ("document:docs/prd.md", "CONTAINS", "section:docs/prd.md#goals") in links
    assert ("section:docs/prd.md#checkout-prd", "PARENT_OF", "section:docs/prd.md#goals") in links
    assert ("section:docs/prd.md#goals", "REFERENCES", "requirement:NFR-2") in links
    story = "section:docs/stories/saved-card.md#saved-card"
    # The story's FR-1 is the PRD's (the one document defining it); FR-7 and NFR-2, defined
    # nowhere, keep the project-wide id.
    assert (story, "REFERENCES", "requirement:docs/prd.md#FR-1") in links
    assert (story, "REFERENCES", "requirement:FR-7") in links
    # One event per node; a file's edges share one EdgesAsserted (3 files, each with edges).
    assert report.events == report.nodes_asserted + 3
    assert report.projected >= report.events


async def test_reingesting_unchanged_files_appends_nothing(
    runtime: Runtime, tmp_path: Path
) -> None:
    project(tmp_path)
    first = await ingest_paths(runtime, [tmp_path])
    count = await runtime.store.count(runtime.scope)
    again = await ingest_paths(runtime, [tmp_path])
    assert (again.events, again.unchanged, again.changed) == (0, 3, [])
    assert await runtime.store.count(runtime.scope) == count == first.events
    forced = await ingest_paths(runtime, [tmp_path], force=True)
    assert forced.events == 0 and forced.unchanged == 3, "force re-derives, finds nothing new"


async def test_one_changed_section_appends_only_that_section_and_the_document(
    runtime: Runtime, tmp_path: Path
) -> None:
    project(tmp_path)
    await ingest_paths(runtime, [tmp_path])
    before = await runtime.store.last_position(runtime.scope)
    moved = PRD.replace("# Checkout PRD", "\n\n# Checkout PRD")  # every line moves down
    write(tmp_path, {"docs/prd.md": moved.replace("Crypto.", "Crypto and cash.")})
    report = await ingest_paths(runtime, [tmp_path])
    assert report.changed == ["docs/prd.md"] and report.unchanged == 2
    new = await runtime.store.read_all(before, scope=runtime.scope)
    assert {e.stream_id for e in new} == {"doc:docs/prd.md"}
    asserted = [e.decode() for e in new]
    assert [(type(e).__name__, getattr(e, "node_id", "")) for e in asserted] == [
        ("NodeAsserted", "document:docs/prd.md"),  # its fingerprint changed
        ("NodeAsserted", "section:docs/prd.md#non-goals"),
    ]


async def test_a_renamed_heading_retires_the_old_id_and_links_to_it(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    project(tmp_path)
    await ingest_paths(runtime, [tmp_path])
    write(tmp_path, {"docs/prd.md": PRD.replace("## Goals", "## Objectives")})
    report = await ingest_paths(runtime, [tmp_path / "docs/prd.md"])
    assert report.nodes_retired == 1
    graph = await nodes(system_pool, scope)
    assert "section:docs/prd.md#goals" not in graph
    assert "section:docs/prd.md#objectives" in graph
    links = await edges(system_pool, scope)
    assert not any("section:docs/prd.md#goals" in (a, b) for a, _, b in links)
    stream = await runtime.store.read_stream(scope, "doc:docs/prd.md")
    retired = [e.decode() for e in stream if e.event_type == "NodeRetired"]
    assert retired == [NodeRetired(node_id="section:docs/prd.md#goals", reason=retired[0].reason)]
    assert "docs/prd.md" in retired[0].reason

    # The epic's link now dangles; it comes back when the heading does and the epic is
    # re-derived (force), since a retired node takes the edges pointing at it along.
    write(tmp_path, {"docs/prd.md": PRD})
    await ingest_paths(runtime, [tmp_path])
    epic_link = ("section:docs/epics/checkout.md#checkout-epic", "REFERENCES")
    assert (*epic_link, "section:docs/prd.md#goals") not in await edges(system_pool, scope)
    await ingest_paths(runtime, [tmp_path], force=True)
    assert (*epic_link, "section:docs/prd.md#goals") in await edges(system_pool, scope)


async def test_removed_files_retire_their_nodes_and_orphaned_requirements(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    project(tmp_path)
    await runtime.store.append(
        scope,
        "elsewhere",
        [NodeAsserted(node_id="requirement:FR-9", node_type="Requirement", name="FR-9 by hand")],
    )
    write(tmp_path, {"docs/notes.md": "# Notes\nFR-9 and FR-7 again.\n"})
    await ingest_paths(runtime, [tmp_path])
    graph = await nodes(system_pool, scope)
    assert graph["requirement:FR-9"]["name"] == "FR-9 by hand", "existing nodes are not clobbered"

    (tmp_path / "docs/stories/saved-card.md").unlink()
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.removed == ["docs/stories/saved-card.md"]
    graph = await nodes(system_pool, scope)
    assert not any(n.startswith("section:docs/stories/") for n in graph)
    assert "document:docs/stories/saved-card.md" not in graph
    assert "requirement:FR-7" in graph, "docs/notes.md still mentions FR-7"
    assert "requirement:docs/prd.md#FR-1" in graph, "the PRD still defines FR-1"

    (tmp_path / "docs/notes.md").unlink()
    report = await ingest_paths(runtime, [tmp_path / "docs/notes.md"])
    assert report.removed == ["docs/notes.md"]
    graph = await nodes(system_pool, scope)
    assert "requirement:FR-7" not in graph, "nothing mentions FR-7 any more"
    assert "requirement:FR-9" in graph, "not made by ingestion, so not retired by it"
    stream = await runtime.store.read_stream(scope, "doc:docs/notes.md")
    assert stream[-1].decode() == NodeRetired(
        node_id="requirement:FR-7", reason="no file mentions it since docs/notes.md changed"
    )


async def test_bad_input_is_reported_with_file_and_reason_and_the_rest_is_ingested(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    root = tmp_path / "proj"
    outside = tmp_path / "secret.md"
    outside.write_text("# Secret\nhunter2\n", encoding="utf-8")
    write(
        root,
        {
            "docs/ok.md": "# OK\n[escape](../../../secret.md) [fine](bad.md)\n",
            "docs/bad.md": b"# Bad\n\xff\xfe\n",
            "docs/image.md": b"\x89PNG\r\n\x1a\n\x00\x00",
            "docs/huge.md": "# Huge\n" + "x" * 2_100_000,
            "docs/notes.txt": "not markdown",
        },
    )
    (root / "docs/link.md").symlink_to(outside)
    rt = Runtime(
        runtime.settings.__class__(runtime.settings.database_url, scope, root),
        runtime.url,
        runtime.app_pool,
        runtime.system_pool,
        runtime.embedder,
    )
    report = await ingest_paths(
        rt, [root / "docs", root / "../secret.md", root / "docs/notes.txt", root / "nope.md"]
    )
    assert report.changed == ["docs/ok.md"]
    assert sorted(report.rejected) == [str(root / "../secret.md"), "docs/notes.txt", "nope.md"]
    assert report.failed == ["docs/link.md"]
    assert sorted(report.unreadable) == ["docs/bad.md", "docs/huge.md", "docs/image.md"]
    warned = {p.path for p in report.problems if p.severity == "warning"}
    assert {"docs/bad.md", "docs/huge.md", "docs/image.md"} <= warned, "skipped, not failed"
    messages = [str(p) for p in report.problems]
    assert "docs/bad.md:2: invalid UTF-8 at byte offset 6: invalid start byte" in messages
    assert "docs/image.md:3: refused: binary file (NUL byte at offset 8)" in messages
    assert any(m.startswith("docs/huge.md:1: refused: file is 2100007 bytes") for m in messages)
    assert any(m.startswith("docs/link.md:1: refused: resolves to") for m in messages)
    assert any(
        m.startswith("docs/ok.md:2: link target '../../../secret.md' is outside") for m in messages
    )
    assert any("secret.md is outside the project root" in m for m in messages)
    assert (
        "docs/notes.txt:1: refused: neither Markdown (.md, .markdown) nor source code of a "
        "supported language" in messages
    )
    assert "nope.md:1: no such file (and nothing ingested from it)" in messages
    graph = await nodes(system_pool, scope)
    assert "document:docs/ok.md" in graph
    assert not any("hunter2" in n["content"] for n in graph.values()), "nothing outside is read"


async def test_event_sources_name_the_commit_for_committed_files(
    runtime: Runtime, tmp_path: Path, scope: Scope
) -> None:
    repo = Repo(tmp_path)
    project(tmp_path)
    sha = repo.commit("specs")
    write(tmp_path, {"docs/prd.md": PRD + "\n## Later\n"})
    await ingest_paths(runtime, [tmp_path])
    epic = await runtime.store.read_stream(scope, "doc:docs/epics/checkout.md")
    assert {e.metadata["source"] for e in epic} == {f"docs/epics/checkout.md@{sha}"}
    prd = await runtime.store.read_stream(scope, "doc:docs/prd.md")
    sources = {e.metadata["source"] for e in prd}
    assert len(sources) == 1 and sources.pop().startswith("docs/prd.md@sha256:")
    assert {e.metadata["actor"] for e in prd} == {"kg ingest"}
    assert len({e.metadata["correlation_id"] for e in prd + epic}) == 1, "one run, one id"


async def test_a_schema_map_change_retypes_files_whose_content_did_not_change(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    project(tmp_path)
    await ingest_paths(runtime, [tmp_path])
    map_ = "include_defaults: false\nrules:\n  - type: Spec\n    paths: ['docs/**']\n"
    write(tmp_path, {"kg-schema.yaml": map_})
    report = await ingest_paths(runtime, [tmp_path])
    assert len(report.changed) == 3
    graph = await nodes(system_pool, scope)
    assert graph["document:docs/prd.md"]["node_type"] == "Spec"
    assert graph["section:docs/prd.md#goals"]["node_type"] == "Section"
    assert (report.events, report.nodes_asserted) == (3, 3), "only the document nodes changed"


async def hnsw_index(pool: asyncpg.Pool) -> bool:
    return bool(
        await pool.fetchval(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'kg_nodes_embedding'"
        )
    )


async def test_a_large_ingest_builds_the_vector_index_once_at_the_end(
    runtime: Runtime,
    system_pool: asyncpg.Pool,
    scope: Scope,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk, "BULK_MIN_NODES", 1)
    dropped: list[bool] = []
    real_apply = NodesProjection.apply

    async def spy(self: NodesProjection, conn: Any, events: Any, ctx: Any) -> None:
        dropped.append(not await hnsw_index(system_pool))
        await real_apply(self, conn, events, ctx)

    monkeypatch.setattr(NodesProjection, "apply", spy)
    project(tmp_path)
    report = await ingest_paths(runtime, [tmp_path])
    assert report.projected == report.events
    assert dropped and all(dropped), "rows were projected without per-row index inserts"
    assert await hnsw_index(system_pool), "and the index is back"
    graph = await nodes(system_pool, scope)
    assert all(n["vec"] for n in graph.values())


async def test_a_bulk_load_projects_nodes_and_edges_in_lanes_of_their_own_to_the_same_rows(
    runtime: Runtime,
    system_pool: asyncpg.Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bulk, "BULK_MIN_NODES", 1)
    monkeypatch.setattr(pipeline, "CHUNK_FILES", 1)  # a transaction per file: catch-ups between
    asked: list[list[str] | None] = []
    real_catch_up = ProjectionRunner.catch_up

    async def spy(
        self: ProjectionRunner,
        names: Any = None,
        *,
        tenant_id: str | None = None,
        until: int | None = None,
        analyze: bool = True,
    ) -> int:
        asked.append(None if names is None else list(names))
        return await real_catch_up(self, names, tenant_id=tenant_id, until=until, analyze=analyze)

    monkeypatch.setattr(ProjectionRunner, "catch_up", spy)
    project(tmp_path)
    report = await ingest_paths(runtime, [tmp_path])
    assert ["kg_nodes"] in asked, "kg_nodes caught up in a lane of its own"
    assert any(a and "kg_edges" in a and "kg_nodes" not in a for a in asked), "and the others"
    assert report.projected == report.events
    assert all(s.lag == 0 for s in await runtime.runner.status(runtime.scope.tenant_id))
    assert await hnsw_index(system_pool)
    projected = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    await runtime.runner.rebuild()
    assert [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")] == projected


@pytest.fixture
def nothing_frozen() -> Iterator[None]:
    """This process as a fresh ``kg ingest`` finds it, nothing frozen: an earlier test in the
    same worker (an in-process MCP server freezes what start-up loaded) may have frozen
    objects, which would leave the ingest nothing to do here. Frozen again afterwards."""
    was = gc.get_freeze_count()
    gc.unfreeze()
    yield
    if was:
        gc.freeze()


@pytest.mark.usefixtures("nothing_frozen")
async def test_a_large_ingest_freezes_what_survives_each_chunk_until_it_ends(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "POOL_MIN_FILES", 1)
    monkeypatch.setattr(pipeline, "CHUNK_FILES", 1)
    frozen: list[int] = []
    real_apply = pipeline.Pipeline._apply

    async def spy(self: pipeline.Pipeline, items: Any) -> None:
        frozen.append(gc.get_freeze_count())
        await real_apply(self, items)

    monkeypatch.setattr(pipeline.Pipeline, "_apply", spy)
    project(tmp_path)
    assert gc.get_freeze_count() == 0
    await ingest_paths(runtime, [tmp_path])
    assert frozen[0] == 0 and all(n > 0 for n in frozen[1:]), "frozen after the first chunk"
    assert gc.get_freeze_count() == 0, "and handed back at the end"

    monkeypatch.setattr(pipeline, "append_multi", _conflict)
    write(tmp_path, {"docs/new.md": "# New\n", "docs/other.md": "# Other\n"})
    with pytest.raises(ConcurrencyConflictError):
        await ingest_paths(runtime, [tmp_path])
    assert gc.get_freeze_count() == 0, "a failed ingest hands them back too"


@pytest.mark.usefixtures("nothing_frozen")
async def test_a_process_that_froze_objects_itself_keeps_them_frozen(
    runtime: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "POOL_MIN_FILES", 1)
    project(tmp_path)
    gc.freeze()
    try:
        await ingest_paths(runtime, [tmp_path])
        assert gc.get_freeze_count() > 0, "the ingest did not unfreeze what it had not frozen"
    finally:
        gc.unfreeze()


async def _conflict(*args: Any, **kwargs: Any) -> Any:
    raise ConcurrencyConflictError("doc:x", 0, 1)


async def test_a_failed_ingest_puts_the_vector_index_back(
    runtime: Runtime, system_pool: asyncpg.Pool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "BULK_MIN_NODES", 1)
    seen: list[bool] = []

    async def broken(*args: Any, **kwargs: Any) -> Any:
        seen.append(await hnsw_index(system_pool))
        raise ConcurrencyConflictError("doc:x", 0, 1)

    monkeypatch.setattr(pipeline, "append_multi", broken)
    project(tmp_path)
    with pytest.raises(ConcurrencyConflictError):
        await ingest_paths(runtime, [tmp_path])
    assert seen == [False, False, False], "dropped for the bulk load, three attempts"
    assert await hnsw_index(system_pool)


async def test_an_agents_metadata_goes_with_every_event(
    runtime: Runtime, tmp_path: Path, scope: Scope
) -> None:
    write(tmp_path, {"docs/a.md": "# A\n\nFR-3\n"})
    meta = EventMetadata(actor="agent:claude", session_id="s-1", tool_call_id="call-7")
    report = await ingest_paths(runtime, ["docs/a.md"], metadata=meta)
    assert report.changed == ["docs/a.md"], "paths are relative to the project root"
    events = await runtime.store.read_stream(scope, "doc:docs/a.md")
    assert {
        (e.metadata["actor"], e.metadata["session_id"], e.metadata["tool_call_id"]) for e in events
    } == {("agent:claude", "s-1", "call-7")}
    assert {e.metadata["source"] for e in events} == {
        f"docs/a.md@sha256:{report_hash(tmp_path / 'docs/a.md')}"
    }


def report_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


async def test_a_concurrent_writer_makes_the_ingest_reread_and_retry(
    runtime: Runtime,
    system_pool: asyncpg.Pool,
    scope: Scope,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project(tmp_path)
    real = pipeline.append_multi
    calls: list[int] = []

    async def racing(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:  # someone else ingests the PRD between our read and our append
            await runtime.store.append(
                scope,
                "doc:docs/prd.md",
                [NodeAsserted(node_id="document:docs/prd.md", node_type="PRD", name="theirs")],
            )
        return await real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "append_multi", racing)
    report = await ingest_paths(runtime, [tmp_path])
    assert len(calls) == 2, "the first append conflicted, the retry went through"
    assert sorted(report.changed) == [
        "docs/epics/checkout.md",
        "docs/prd.md",
        "docs/stories/saved-card.md",
    ]
    graph = await nodes(system_pool, scope)
    assert graph["document:docs/prd.md"]["name"] == "Checkout PRD", "ours, re-diffed on top"
    assert {"requirement:docs/prd.md#FR-1", "requirement:FR-7", "requirement:NFR-2"} <= set(graph)
    monkeypatch.setattr(pipeline, "append_multi", real)
    assert (await ingest_paths(runtime, [tmp_path])).events == 0


def test_a_mid_sized_run_is_cut_into_chunks_that_can_overlap_and_a_large_one_keeps_its_size() -> (
    None
):
    files = [f"docs/{i:04d}.md" for i in range(200)]
    chunks = pipeline._chunks(files)
    assert [len(c) for c in chunks] == [50, 50, 50, 50], "four chunks: projecting overlaps"
    assert [f for c in chunks for f in c] == files, "every file once, in order"
    assert [len(c) for c in pipeline._chunks(files[:40])] == [32, 8], "no chunk under 32 files"
    assert [len(c) for c in pipeline._chunks(files[:5])] == [5]
    many = [f"docs/{i:05d}.md" for i in range(2000)]
    assert {len(c) for c in pipeline._chunks(many)[:-1]} == {pipeline.CHUNK_FILES}


async def test_a_run_appended_in_chunks_projects_what_one_transaction_would(
    runtime: Runtime,
    system_pool: asyncpg.Pool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pipeline, "MIN_CHUNK_FILES", 1)
    applied: list[int] = []
    real_apply = pipeline.Pipeline._apply

    async def spy(self: pipeline.Pipeline, items: Any) -> None:
        applied.append(len(items))
        await real_apply(self, items)

    monkeypatch.setattr(pipeline.Pipeline, "_apply", spy)
    write(tmp_path, {f"docs/part-{i}.md": f"# Part {i}\n\nSee [[Part {(i + 1) % 8}]].\n" for i in
                     range(8)})  # fmt: skip
    report = await ingest_paths(runtime, [tmp_path])
    assert applied == [2, 2, 2, 2], "four chunks, each its own transaction"
    assert report.projected == report.events and not report.failed
    projected = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    await runtime.runner.rebuild()
    assert [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")] == projected


async def test_a_new_definition_takes_over_the_mentions_of_unchanged_files(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    """A mention resolves to the nearest definition when its file is parsed; a definition
    that comes (or goes) later re-resolves the files that mention the id, though they did
    not change, and the project-wide node nothing points at any more is retired."""
    plan = "section:specs/002-pay/plan.md#plan"
    write(tmp_path, {"specs/002-pay/plan.md": "# Plan\n\nFR-001 first.\n"})
    await ingest_paths(runtime, [tmp_path])
    assert (plan, "REFERENCES", "requirement:FR-1") in await edges(system_pool, scope)

    write(
        tmp_path,
        {
            "specs/002-pay/spec.md": "# Pay\n\n- **FR-001**: Take the card.\n",
            "specs/001-cart/spec.md": "# Cart\n\n- **FR-001**: Keep the cart.\n",
        },
    )
    report = await ingest_paths(runtime, [tmp_path])
    assert "specs/002-pay/plan.md" in report.changed, "re-parsed: FR-001 got definitions"
    links = await edges(system_pool, scope)
    assert (plan, "REFERENCES", "requirement:specs/002-pay/spec.md#FR-1") in links
    assert not any(e[2].startswith("requirement:specs/001-cart") for e in links if e[0] == plan)
    graph = await nodes(system_pool, scope)
    assert "requirement:FR-1" not in graph, "nothing mentions the project-wide FR-1 any more"

    (tmp_path / "specs/002-pay/spec.md").unlink()
    await ingest_paths(runtime, [tmp_path])
    links = await edges(system_pool, scope)
    # The plan's own definition is gone: the one document left defining FR-001 is meant.
    assert [e[2] for e in links if e[0] == plan and e[1] == "REFERENCES"] == [
        "requirement:specs/001-cart/spec.md#FR-1"
    ]
