"""Embeddings on the cluster (issue 30, items 5 and 6): a 768-dimension model changes the
distributed tables' vector columns (an ALTER on distributed tables, in the projection's
transaction), an outage leaves nodes waiting and the catch-up fills them (an UPDATE of a
distributed table joined with the reference-table cache), and switching back re-embeds."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from kg.cluster import nodes
from kg.config import Scope
from tests.citus.conftest import cli_env, new_database
from tests.embeddings.openai_stub import StubServer
from tests.mcp.client import free_port
from tests.support import kg

pytestmark = pytest.mark.citus

_STATE = """
SELECT (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
         WHERE attrelid = 'kg_nodes'::regclass AND attname = 'embedding') AS nodes,
       (SELECT format_type(atttypid, atttypmod) FROM pg_attribute
         WHERE attrelid = 'kg_passages'::regclass AND attname = 'embedding') AS passages,
       (SELECT model_id FROM kg_embedding_index) AS model,
       (SELECT count(*) FROM kg_nodes WHERE embedding IS NULL) AS waiting,
       (SELECT count(*) FROM kg_nodes) AS nodes_count
"""


async def _state(url: str) -> dict[str, object]:
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(_STATE)
        assert row is not None
        return dict(row)
    finally:
        await conn.close()


async def test_a_768_model_an_outage_and_switching_back_on_distributed_tables(
    citus_cluster: nodes.Cluster, tmp_path: Path
) -> None:
    url = new_database(citus_cluster)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/login.md").write_text(
        "# Login\n\nUsers log in with a password.\n\n## Lockout\n\nFive failures lock it.\n"
    )
    port = free_port()
    scope = Scope("t-embed", "webshop")
    nomic = cli_env(
        url, scope, KG_EMBEDDER="openai", KG_EMBEDDER_URL=f"http://127.0.0.1:{port}/v1",
        KG_EMBEDDER_MODEL="nomic-embed-text",
    )  # fmt: skip
    with StubServer(dimensions=768, port=port):
        out = kg("ingest", "docs", env=nomic, cwd=tmp_path)
        assert out.returncode == 0 and "warning" not in out.stderr, out.stderr
        state = await _state(url)
        assert (state["nodes"], state["passages"], state["model"], state["waiting"]) == (
            "vector(768)", "vector(768)", "openai:nomic-embed-text", 0,
        )  # fmt: skip
        build = kg(
            "context", "build", "--task", "lockout", "--mode", "semantic", "--json",
            env=nomic, cwd=tmp_path,
        )  # fmt: skip
        assert build.returncode == 0, build.stderr
        assert json.loads(build.stdout)["embedder"] == "openai:nomic-embed-text"

    (tmp_path / "docs/billing.md").write_text("# Billing\n\n## Invoices\n\nMonthly.\n")
    down = kg("ingest", "docs", env=nomic, cwd=tmp_path)
    assert down.returncode == 0, down.stderr
    assert "3 node(s) wait for an embedding" in down.stderr
    assert (await _state(url))["waiting"] == 3
    with StubServer(dimensions=768, port=port):
        back = kg("sync", env=nomic, cwd=tmp_path)
        assert back.returncode == 0 and "warning" not in back.stderr, back.stderr
    assert (await _state(url))["waiting"] == 0

    default = cli_env(url, scope)  # the hashing embedder, 384 dimensions
    rebuilt = kg("projections", "rebuild", "kg_nodes", "--yes", env=default, cwd=tmp_path)
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    assert "rebuilding kg_nodes embeds" in rebuilt.stdout
    state = await _state(url)
    assert (state["nodes"], state["passages"], state["model"], state["waiting"]) == (
        "vector(384)", "vector(384)", "hashing-v1-384", 0,
    )  # fmt: skip
    assert state["nodes_count"] == 6
    search = kg("query", "invoices", "--mode", "semantic", env=default, cwd=tmp_path)
    assert search.returncode == 0 and "fell back" not in search.stderr, search.stderr
    assert "section:docs/billing.md#invoices" in search.stdout
