"""Embeddings of any size (issue 30, item 6): a 768-dimension model served by an
OpenAI-compatible endpoint (a real local HTTP server, ``openai_stub``) ingests, builds and
searches; changing the model back re-embeds, with the cost shown and confirmed first."""

from __future__ import annotations

import json
from pathlib import Path

import asyncpg
import pytest

from tests.mcp.client import free_port
from tests.support import cli_env, kg

from .openai_stub import StubServer

SPECS = {
    "login.md": "# Login\n\nUsers log in with a password.\n\n## Lockout\n\n"
    "After five failed attempts the account locks for fifteen minutes.\n",
    "billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent on the first of the month.\n",
}

_COLUMN = (
    "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
    "WHERE attrelid = $1::regclass AND attname = 'embedding'"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    for name, text in SPECS.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    return tmp_path


async def _schema(db_url: str) -> dict[str, object]:
    conn = await asyncpg.connect(db_url)
    try:
        model = await conn.fetchrow("SELECT model_id, dimensions FROM kg_embedding_index")
        vector = await conn.fetchval(
            "SELECT embedding::text FROM kg_nodes WHERE embedding IS NOT NULL LIMIT 1"
        )
        async with conn.transaction():
            # What the planner needs to use the HNSW index: a typed column and the same
            # operator; with sequential scans priced out it must pick the index.
            await conn.execute("SET LOCAL enable_seqscan = off")
            plan = await conn.fetchval(
                "EXPLAIN (FORMAT JSON) SELECT node_id FROM kg_nodes "
                "ORDER BY embedding <=> $1::vector LIMIT 5",
                vector,
            )
        return {
            "model": None if model is None else (model["model_id"], model["dimensions"]),
            "nodes": await conn.fetchval(_COLUMN, "kg_nodes"),
            "passages": await conn.fetchval(_COLUMN, "kg_passages"),
            "unembedded": await conn.fetchval(
                "SELECT count(*) FROM kg_nodes WHERE embedding IS NULL"
            ),
            "index_used": "kg_nodes_embedding" in plan,
        }
    finally:
        await conn.close()


async def test_a_768_dimension_model_ingests_builds_and_searches_and_switching_back_reembeds(
    db_url: str, project: Path
) -> None:
    port = free_port()
    nomic = cli_env(
        db_url,
        KG_EMBEDDER="openai",
        KG_EMBEDDER_URL=f"http://127.0.0.1:{port}/v1",
        KG_EMBEDDER_MODEL="nomic-embed-text",
    )
    with StubServer(dimensions=768, port=port):
        ingest = kg("ingest", "docs", env=nomic, cwd=project)
        assert ingest.returncode == 0, ingest.stderr
        assert "warning" not in ingest.stderr
        schema = await _schema(db_url)
        assert schema == {
            "model": ("openai:nomic-embed-text", 768),
            "nodes": "vector(768)",
            "passages": "vector(768)",
            "unembedded": 0,
            "index_used": True,
        }
        build = kg(
            "context", "build", "--task", "account lockout", "--mode", "semantic", "--json",
            env=nomic, cwd=project,
        )  # fmt: skip
        assert build.returncode == 0, build.stderr
        graph = json.loads(build.stdout)
        assert graph["embedder"] == "openai:nomic-embed-text" and not graph["warnings"]
        assert any(sim != 0 for _, sim in graph["semantic_anchors"]), "vectors were compared"
        search = kg("query", "invoices", "--mode", "semantic", env=nomic, cwd=project)
        assert search.returncode == 0, search.stderr
        assert "section:docs/billing.md#invoices" in search.stdout
        assert "warning" not in search.stderr

    # Back to the 384-dimension default: the index holds another model's vectors.
    default = cli_env(db_url)  # KG_EMBEDDER=hashing, 384 dimensions
    query = kg("query", "invoices", "--mode", "semantic", env=default, cwd=project)
    assert query.returncode == 0, query.stderr
    assert "fell back to full text: the index holds vectors of openai:nomic-embed-text" in (
        query.stderr
    )
    assert "kg projections rebuild kg_nodes" in query.stderr

    refused = kg("projections", "rebuild", "kg_nodes", env=default, cwd=project)
    assert refused.returncode == 1
    assert "the index holds vectors of openai:nomic-embed-text; the configured embedder is " + (
        "hashing-v1-384"
    ) in refused.stdout.replace("\n", " ")
    assert "rebuilding kg_nodes embeds 6 text(s) not in the cache" in refused.stdout
    assert "texts/s (measured on 6 of them" in refused.stdout
    assert "re-run with --yes" in refused.stderr
    assert (await _schema(db_url))["model"] == ("openai:nomic-embed-text", 768), "untouched"

    rebuilt = kg("projections", "rebuild", "kg_nodes", "--yes", env=default, cwd=project)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "embedded 6 new texts" in rebuilt.stdout
    schema = await _schema(db_url)
    assert schema["model"] == ("hashing-v1-384", 384)
    assert (schema["nodes"], schema["passages"]) == ("vector(384)", "vector(384)")
    assert schema["unembedded"] == 0 and schema["index_used"]
    searched = kg("query", "invoices", "--mode", "semantic", env=default, cwd=project)
    assert searched.returncode == 0 and "fell back" not in searched.stderr
    assert "section:docs/billing.md#invoices" in searched.stdout
