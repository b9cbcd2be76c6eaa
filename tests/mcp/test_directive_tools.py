"""detect_context and query_directives through real MCP clients, over stdio and HTTP."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.client import (
    call,
    error_text,
    http_server,
    http_session,
    ok,
    server_env,
    stdio_session,
    text_of,
)
from tests.rules.test_query_directives import copy_examples


def rules_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    copy_examples(project)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["fastapi>=0.100", "sqlalchemy"]\n'
    )
    return project


async def test_an_agent_gets_the_rules_for_its_files_as_a_checklist_over_stdio(
    db_url: str, tmp_path: Path
) -> None:
    project = rules_project(tmp_path)
    env = {**server_env(db_url), "KG_PROJECT_ROOT": str(project)}
    async with stdio_session(env, project) as session:
        empty = await call(session, "query_directives", task="add a migration")
        assert "no directives in this project yet" in error_text(empty)
        ok(await call(session, "ingest_markdown"))

        detected = ok(
            await call(
                session, "detect_context", task="add a column to the events table",
                paths=["migrations/versions/0013_add_column.py"],
            )
        )  # fmt: skip
        assert detected["layer"] == "4-Persistence"
        assert "database" in [t["value"] for t in detected["topics"]]
        assert {"fastapi", "sqlalchemy"} <= {f["value"] for f in detected["frameworks"]}
        assert detected["path_layers"][0]["convention"] == "migrations"

        result = await call(
            session, "query_directives", task="add a column to the events table",
            paths=["migrations/versions/0013_add_column.py"], session_id="sess-42",
        )  # fmt: skip
        served = ok(result)
        assert served["directives"][0]["strength"] == "MUST"
        assert any(
            d["source"].startswith(".cursor/rules/migrations.mdc:") for d in served["directives"]
        )
        assert served["diagnostics"]["layer"] == "4-Persistence"
        assert "### MUST" in text_of(result)  # the text content is the checklist
        assert served["served_id"] in text_of(result)

        bad = await call(session, "query_directives", task="x", layer="Kitchen")
        assert "layer 'Kitchen' is unknown" in error_text(bad)

        # Issue 30 item 10: nothing to detect from is an error, not a guess about nothing.
        for blank in ({}, {"task": "   "}):
            nothing = await call(session, "detect_context", **blank)
            assert "needs something to detect from" in error_text(nothing)


async def test_query_directives_over_http(db_url: str, tmp_path: Path) -> None:
    project = rules_project(tmp_path)
    env = {**server_env(db_url), "KG_PROJECT_ROOT": str(project)}
    async with http_server(env, project) as url, http_session(url) as session:
        ok(await call(session, "ingest_markdown"))
        served = ok(
            await call(
                session, "query_directives", task="fix a flaky test", paths=["tests/test_a.py"]
            )
        )
        assert {d["source"].split(":")[0] for d in served["directives"]} == {"AGENTS.md"}
        assert served["diagnostics"]["layer"] == "5-Tests"
