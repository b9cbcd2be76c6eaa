"""An embedder outage degrades, never blocks (issue 30, item 5).

The embedder is a real HTTP server speaking OpenAI's embeddings API (``openai_stub``), stopped
for the outage and started again on the same port; ``kg`` runs as a user runs it (subprocesses,
real database) and as an agent reaches it (a real MCP client over stdio).
"""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from tests.mcp.client import call, free_port, ok, stdio_session
from tests.support import cli_env, kg

from .openai_stub import StubServer

LOGIN = """# Login

Users log in with a password.

## Lockout

After five failed attempts the account locks for fifteen minutes.
"""

BILLING = """# Billing

## Invoices

Invoices are sent on the first day of the month.
"""


@pytest.fixture
def port() -> int:
    return free_port()


@pytest.fixture
def env(db_url: str, port: int) -> dict[str, str]:
    return cli_env(
        db_url,
        KG_EMBEDDER="openai",
        KG_EMBEDDER_URL=f"http://127.0.0.1:{port}/v1",
        KG_EMBEDDER_MODEL="stub-model",
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/login.md").write_text(LOGIN, encoding="utf-8")
    return tmp_path


async def _unembedded(db_url: str) -> int:
    conn = await asyncpg.connect(db_url)
    try:
        return int(await conn.fetchval("SELECT count(*) FROM kg_nodes WHERE embedding IS NULL"))
    finally:
        await conn.close()


async def test_an_outage_degrades_and_the_waiting_nodes_are_embedded_when_it_is_back(
    env: dict[str, str], project: Path, port: int, db_url: str
) -> None:
    # Down from the start: the ingest records and projects the nodes, without vectors.
    ingest = kg("ingest", "docs", env=env, cwd=project)
    assert ingest.returncode == 0, ingest.stderr
    assert "ingested 1 files: 1 changed" in ingest.stdout
    assert "warning: 3 node(s) wait for an embedding" in ingest.stderr
    assert "openai:stub-model" in ingest.stderr and "Connection refused" in ingest.stderr
    assert await _unembedded(db_url) == 3

    status = kg("status", env=env, cwd=project)
    assert status.returncode == 0, status.stderr
    assert "3 node(s) wait for an embedding" in status.stdout
    assert "(lag 0)" in status.stdout and "(lag 3" not in status.stdout

    # Full text, anchor builds: as if nothing had happened.
    fulltext = kg("query", "lockout", "--mode", "fulltext", env=env, cwd=project)
    assert fulltext.returncode == 0, fulltext.stderr
    assert "section:docs/login.md#lockout" in fulltext.stdout
    assert "warning" not in fulltext.stderr
    anchor = kg("context", "build", "--anchor", "document:docs/login.md", env=env, cwd=project)
    assert anchor.returncode == 0, anchor.stderr
    assert "section:docs/login.md#lockout" in anchor.stdout
    # The audit compares everything but the vectors it cannot have, and says so.
    verify = kg("audit", "verify", "--projections", env=env, cwd=project)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "kg_nodes: ok" in verify.stdout
    assert "(vectors not compared: 3 node(s) wait for an embedding)" in verify.stdout

    # Semantic calls fall back to full text, saying which embedder failed and how many wait.
    hybrid = kg("query", "account lockout", env=env, cwd=project)
    assert hybrid.returncode == 0, hybrid.stderr
    assert "section:docs/login.md#lockout" in hybrid.stdout
    assert "semantic search fell back to full text: embedder openai:stub-model" in hybrid.stderr
    build = kg(
        "context", "build", "--task", "account lockout", "--mode", "semantic", "--json",
        env=env, cwd=project,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    graph = json.loads(build.stdout)
    assert "section:docs/login.md#lockout" in [n["node_id"] for n in graph["nodes"]]
    assert graph["embedder"] is None, "no vector was used: the log must not say one was"
    warnings = " | ".join(graph["warnings"])
    assert "3 node(s) of this project wait for an embedding" in warnings
    assert "fell back to full text: embedder openai:stub-model" in warnings
    assert "Connection refused" in warnings
    # The log holds what the agent was shown: a reviewer re-derives it, full text and all.
    reproduced = kg("audit", "context", graph["context_graph_id"], env=env, cwd=project)
    assert reproduced.returncode == 0, reproduced.stdout + reproduced.stderr
    assert reproduced.stdout.startswith("MATCH")

    # The embedder is back: the next sync embeds what waits, and nothing else is asked of it.
    (project / "docs/billing.md").write_text(BILLING, encoding="utf-8")
    with StubServer(port=port) as stub:
        again = kg("ingest", "docs", env=env, cwd=project)
        assert again.returncode == 0, again.stderr
        assert "warning" not in again.stderr
        assert await _unembedded(db_url) == 0
        embedded = {text for r in stub.requests for text in r.body["input"]}
        assert any(t.startswith("Login > Lockout") or "Lockout" in t for t in embedded)
        assert any("Invoices" in t for t in embedded)

        asked = len(stub.requests)
        for args in (
            ("query", "invoices", "--mode", "fulltext"),
            ("context", "build", "--anchor", "document:docs/billing.md"),
            ("context", "build", "--mode", "policy_first", "--anchor", "document:docs/login.md"),
            ("inspect", "document:docs/login.md"),
            ("status",),
        ):
            out = kg(*args, env=env, cwd=project)
            assert out.returncode == 0, (args, out.stderr)
        assert len(stub.requests) == asked, "non-semantic commands never call the embedder"

        status = kg("status", env=env, cwd=project)
        assert "wait for an embedding" not in status.stdout
        semantic = kg(
            "context", "build", "--task", "account lockout", "--mode", "semantic", "--json",
            env=env, cwd=project,
        )  # fmt: skip
        assert semantic.returncode == 0, semantic.stderr
        back = json.loads(semantic.stdout)
        assert back["embedder"] == "openai:stub-model"
        assert not [w for w in back["warnings"] if "embedding" in w or "fell back" in w]


async def test_an_agent_gets_full_text_and_the_warnings_in_the_structured_result(
    env: dict[str, str], project: Path, port: int
) -> None:
    with StubServer(port=port):
        assert kg("ingest", "docs", env=env, cwd=project).returncode == 0
    # The stub is gone: a node ingested now waits for its vector.
    (project / "docs/billing.md").write_text(BILLING, encoding="utf-8")
    async with stdio_session(env, project) as session:
        ingested = ok(await call(session, "ingest_markdown", paths=["docs/billing.md"]))
        assert ingested["waiting_embeddings"] == 3
        assert "openai:stub-model" in ingested["warnings"][0]

        found = ok(await call(session, "query_knowledge_graph", text="invoices", mode="semantic"))
        assert found["mode"] == "fulltext" and found["embedder"] is None
        assert "section:docs/billing.md#invoices" in [r["node_id"] for r in found["results"]]
        assert any("fell back to full text: embedder openai:stub-model" in w
                   for w in found["warnings"])  # fmt: skip

        graph = ok(await call(session, "build_context_graph", task="when are invoices sent"))
        assert graph["mode"] == "semantic" and graph["embedder"] is None
        assert "section:docs/billing.md#invoices" in [n["node_id"] for n in graph["nodes"]]
        assert any("3 node(s) of this project wait" in w for w in graph["warnings"])
        assert any("openai:stub-model" in w for w in graph["warnings"])

        anchored = ok(
            await call(session, "build_context_graph", anchors=["document:docs/login.md"])
        )
        assert not anchored["warnings"]
