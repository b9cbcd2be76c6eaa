"""Graph first, vectors after (issue 34, item 3): ``kg ingest`` makes the graph and its full
text usable before it embeds, and a build meanwhile says how many nodes wait.

In process with the hashing embedder (the rows, the warnings), and as a user runs it: ``kg
ingest`` as a real subprocess against a real OpenAI-compatible HTTP embedder that answers
slowly, interrupted with SIGINT (Ctrl-C) while it embeds, then resumed.
"""

from __future__ import annotations

import hashlib
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg

from kg.config import Scope
from kg.context.service import build_context_graph, parse_request
from kg.ingest.service import embed_backlog, ingest_paths
from kg.projections.embedding_backlog import count_waiting, texts_waiting
from kg.runtime import Runtime
from tests.embeddings.openai_stub import StubServer
from tests.mcp.client import free_port
from tests.support import cli_env, kg

LONG = "Retries back off exponentially after each failure of the payment provider. " * 30
LOGIN = f"""# Login

Users log in with a password.

## Lockout

After five failed attempts the account locks for fifteen minutes.

## Retries

{LONG}
"""


def _project(root: Path, files: int = 1) -> None:
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs/login.md").write_text(LOGIN, encoding="utf-8")
    for i in range(1, files):
        (root / f"docs/topic{i}.md").write_text(
            f"# Topic {i}\n\n## Part {i}\n\nTopic {i} holds the rule number {i}.\n",
            encoding="utf-8",
        )


async def _null_vectors(pool: asyncpg.Pool, scope: Scope) -> tuple[int, int]:
    row = await pool.fetchrow(
        "SELECT (SELECT count(*) FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND embedding IS NULL) AS nodes, (SELECT count(*) FROM kg_passages WHERE "
        "tenant_id = $1 AND project_id = $2 AND embedding IS NULL) AS passages",
        scope.tenant_id,
        scope.project_id,
    )
    assert row is not None
    return int(row["nodes"]), int(row["passages"])


async def test_the_graph_is_usable_before_its_vectors_and_a_build_says_how_many_wait(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    _project(tmp_path)
    report = await ingest_paths(runtime, ["docs"], vectors_after=True)
    assert report.embedded == 0, "nothing was embedded before the graph was usable"
    nodes, passages = await _null_vectors(system_pool, scope)
    assert nodes == report.nodes_asserted > 0 and passages > 0
    assert report.waiting_embeddings == nodes
    async with system_pool.acquire() as conn:
        assert await count_waiting(conn, scope) == nodes
        assert await texts_waiting(conn, scope) > nodes  # the long section's passages too

    # Full text and anchors see everything; a semantic build says what vector search lacks.
    anchor = await build_context_graph(runtime, parse_request(anchors=["document:docs/login.md"]))
    assert "section:docs/login.md#lockout" in [n.node_id for n in anchor.nodes]
    semantic = await build_context_graph(
        runtime, parse_request(task="account lockout after failed attempts", mode="semantic")
    )
    assert "section:docs/login.md#lockout" in [n.node_id for n in semantic.nodes]
    assert any(f"{nodes} node(s) of this project wait for an embedding" in w
               for w in semantic.warnings), semantic.warnings  # fmt: skip

    done = await embed_backlog(runtime)
    assert done.waiting == 0 and done.embedded > 0
    assert await _null_vectors(system_pool, scope) == (0, 0)
    again = await build_context_graph(
        runtime, parse_request(task="account lockout after failed attempts", mode="semantic")
    )
    assert not [w for w in again.warnings if "wait for an embedding" in w]


async def test_vectors_after_ends_with_the_rows_an_inline_ingest_projects(
    runtime: Runtime, system_pool: asyncpg.Pool, tmp_path: Path
) -> None:
    """Same files into two projects, one embedding while projecting, one after: identical
    nodes and passages, vectors included (and the second took the first's cached vectors at
    once: nothing waits)."""
    _project(tmp_path, files=3)
    inline = Scope(runtime.scope.tenant_id, "inline")
    after = Scope(runtime.scope.tenant_id, "after")
    first = await ingest_paths(runtime.in_scope(inline, tmp_path), ["docs"])
    assert first.embedded > 0 and first.waiting_embeddings == 0
    second = await ingest_paths(runtime.in_scope(after, tmp_path), ["docs"], vectors_after=True)
    assert second.waiting_embeddings == 0, "cached vectors are taken while projecting"
    assert second.embedded == 0
    assert await _null_vectors(system_pool, after) == (0, 0)
    rows = {}
    for s in (inline, after):
        rows[s.project_id] = [
            tuple(r)
            for r in await system_pool.fetch(
                "SELECT node_id, content_hash, embedding::text FROM kg_nodes WHERE project_id = $1 "
                "UNION ALL SELECT node_id || '#' || ordinal, content_hash, embedding::text "
                "FROM kg_passages WHERE project_id = $1 ORDER BY 1",
                s.project_id,
            )
        ]
    assert rows["inline"] == rows["after"] and rows["inline"]


def _ingest_process(env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "ingest", "docs"],
        env={**env, "COLUMNS": "200", "KG_RESIDENT": "0"},
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stub_env(db_url: str, port: int) -> dict[str, str]:
    """A ``kg`` environment whose embedder is the stub HTTP server on ``port``."""
    return cli_env(
        db_url,
        KG_EMBEDDER="openai",
        KG_EMBEDDER_URL=f"http://127.0.0.1:{port}/v1",
        KG_EMBEDDER_MODEL="stub-model",
        KG_EMBEDDER_DIMENSIONS="16",
    )


def _wait_for_requests(stub: StubServer, proc: subprocess.Popen[str], count: int) -> None:
    deadline = time.monotonic() + 120
    while len(stub.requests) < count and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert len(stub.requests) >= count, "the embedding started"


async def test_ctrl_c_while_embedding_keeps_the_graph_and_the_next_ingest_resumes(
    db_url: str, tmp_path: Path
) -> None:
    _project(tmp_path, files=60)
    port = free_port()
    env = _stub_env(db_url, port)
    with StubServer(port=port, delay=1.0) as slow:
        proc = _ingest_process(env, tmp_path)
        _wait_for_requests(slow, proc, 2)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, out + err
    assert "graph ready (" in err and "embedding" in err
    assert "interrupted while embedding" in err
    assert "ingested 60 files: 60 changed" in out
    assert " 0 texts embedded" not in out, "the texts embedded before Ctrl-C are counted"

    conn = await asyncpg.connect(db_url)
    try:
        scope = Scope("acme", "webshop")
        cached = await conn.fetchval("SELECT count(*) FROM embedding_cache")
        waiting = await count_waiting(conn, scope)
        total = await conn.fetchval("SELECT count(*) FROM kg_nodes")
        assert cached >= 1, "the chunks embedded before Ctrl-C were kept"
        assert 0 < waiting < total, "the graph is whole; some of it waits for vectors"
        # The graph is there: full text finds a section whose vector may be missing.
        query = kg("query", "rule number 59", "--mode", "fulltext", env=env, cwd=tmp_path)
        assert "section:docs/topic59.md#part-59" in query.stdout, query.stdout + query.stderr
        status = kg("status", env=env, cwd=tmp_path)
        assert f"{waiting} node(s) wait for an embedding" in status.stdout

        before = set(await conn.fetchval("SELECT array_agg(content_hash) FROM embedding_cache"))
        with StubServer(port=port) as fast:
            again = kg("ingest", "docs", env=env, cwd=tmp_path)
            verify = kg("audit", "verify", "--projections", env=env, cwd=tmp_path)
        assert again.returncode == 0, again.stdout + again.stderr
        assert await count_waiting(conn, scope) == 0
        asked = [t for r in fast.requests for t in r.body["input"]]
        assert asked, "the rest was embedded"
        resent = [t for t in asked if hashlib.sha256(t.encode()).hexdigest() in before]
        assert not resent, "no text embedded before Ctrl-C is embedded again"
    finally:
        await conn.close()
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "kg_nodes: ok" in verify.stdout and "not compared" not in verify.stdout


def test_kg_ingest_says_the_graph_is_ready_then_embeds(db_url: str, tmp_path: Path) -> None:
    _project(tmp_path, files=60)
    env = cli_env(db_url)
    done = kg("ingest", "docs", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "graph ready (" in done.stderr and "embedding" in done.stderr
    assert "texts embedded" in done.stdout and "wait for an embedding" not in done.stderr
    status = kg("status", env=env, cwd=tmp_path)
    assert "wait for an embedding" not in status.stdout
    # A few texts to embed: no announcement (it would be noise), embedded all the same.
    (tmp_path / "docs/new.md").write_text("# New\n\n## One\n\nA new rule.\n", encoding="utf-8")
    again = kg("ingest", "docs", env=env, cwd=tmp_path)
    assert again.returncode == 0 and "graph ready" not in again.stderr
    assert "3 texts embedded" in again.stdout, again.stdout


async def test_background_embedding_is_one_detached_process_that_embeds_what_waits(
    db_url: str, tmp_path: Path
) -> None:
    import psutil  # type: ignore[import-untyped]

    from kg.host.background_embed import PID_FILE, running_embedder

    _project(tmp_path, files=60)
    port = free_port()
    env = _stub_env(db_url, port)
    state = tmp_path / ".kg"
    scope = Scope("acme", "webshop")
    with StubServer(port=port, delay=3.0) as slow:
        first = kg("ingest", "docs", "--background", env=env, cwd=tmp_path)
        assert first.returncode == 0, first.stdout + first.stderr
        assert "graph ready (" in first.stderr and "background embedding (started" in first.stderr
        assert "ingested 60 files: 60 changed" in first.stdout
        found = running_embedder(state)
        assert found is not None and (state / PID_FILE).is_file()
        second = kg("ingest", "docs", "--background", env=env, cwd=tmp_path)
        assert second.returncode == 0, second.stdout + second.stderr
        assert f"already running, pid {found.pid}" in second.stderr
        status = kg("status", env=env, cwd=tmp_path)
        assert f"a background embedding runs (pid {found.pid}" in status.stdout, status.stdout
        try:
            psutil.Process(found.pid).wait(120)
        finally:
            if running_embedder(state) is not None:
                psutil.Process(found.pid).kill()
        assert slow.requests, "the detached process asked the embedder"
    conn = await asyncpg.connect(db_url)
    try:
        assert await count_waiting(conn, scope) == 0, (state / "embed.log").read_text()
    finally:
        await conn.close()
    log = (state / "embed.log").read_text()
    assert "60 unchanged" in log and "texts embedded" in log, log
    assert running_embedder(state) is None and not (state / PID_FILE).exists()
