"""ingest_markdown and lint_graph through a real MCP client over stdio."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.client import call, ok, server_env, stdio_session


async def test_an_agent_lints_then_ingests_specs_and_finds_them(
    db_url: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / ".git").mkdir()
    (project / "docs" / "prd.md").write_text(
        "# Checkout PRD\n\n## Goals\n\nPay with the gateway. See [design](design.md#flow).\n"
    )
    (project / "docs" / "design.md").write_text(
        "# Design\n\n## Flow\n\nThe gateway client retries.\n\nBroken: [x](missing.md)\n"
    )
    env = {**server_env(db_url), "KG_PROJECT_ROOT": str(project)}
    async with stdio_session(env, project) as session:
        lint = ok(await call(session, "lint_graph"))
        assert lint["errors"] == 1
        assert lint["problems"][0]["path"] == "docs/design.md"
        assert "missing.md" in lint["problems"][0]["message"]

        first = ok(await call(session, "ingest_markdown"))
        assert sorted(first["changed"]) == ["docs/design.md", "docs/prd.md"]
        assert first["events"] > 0
        again = ok(await call(session, "ingest_markdown", paths=["docs"]))
        assert again["changed"] == [] and again["events"] == 0, "unchanged content appends nothing"

        found = ok(await call(session, "query_knowledge_graph", text="gateway", mode="fulltext"))
        ids = {r["node_id"] for r in found["results"]}
        assert "section:docs/prd.md#goals" in ids

        outside = await call(session, "ingest_markdown", paths=["../../etc"])
        assert outside.is_error or ok(outside)["rejected"], "nothing outside the project is read"
