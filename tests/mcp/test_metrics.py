"""``kg mcp --transport http --metrics``: Prometheus metrics scraped after real tool calls by the
SDK's client, and the OpenTelemetry spans of those calls."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx

from kg.runtime import Runtime
from tests.mcp.client import call, http_server, http_session, ok, server_env
from tests.mcp.turn import agent_turn


def sample(text: str, name: str, **labels: str) -> float:
    """One sample's value from the exposition text (0 when absent)."""
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    pattern = rf"^{re.escape(name)}{re.escape('{' + wanted + '}') if wanted else ''} (\S+)$"
    found = re.search(pattern, text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_a_scrape_after_tool_calls_shows_them(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    (tmp_path / ".git").mkdir()  # the project root: spans go to its .kg/
    async with http_server(server_env(db_url), tmp_path, "--metrics") as url:
        metrics_url = url.replace("/mcp", "/metrics")
        async with httpx.AsyncClient() as http:
            before = (await http.get(metrics_url)).text
            assert sample(before, "kg_tool_calls_total", tool="build_context_graph") == 0
            assert "kg_embedder_queue_texts 0.0" in before
            async with http_session(url) as session:
                turn = await agent_turn(session)
                await call(session, "trace_decision_lineage", decision_id="missing")
                ok(await call(session, "query_knowledge_graph", text="checkout"))
            response = await http.get(metrics_url)
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/plain")
            after = response.text
            assert (await http.post(metrics_url)).status_code == 405

    tool = "build_context_graph"
    assert sample(after, "kg_tool_calls_total", tool=tool) == 1
    assert sample(after, "kg_tool_duration_seconds_count", tool=tool) == 1
    assert sample(after, "kg_tool_duration_seconds_sum", tool=tool) > 0
    served = sample(after, "kg_served_tokens_total", tool=tool)
    assert served == turn["graph"]["token_estimate"] > 0
    assert sample(after, "kg_tool_calls_total", tool="trace_decision_lineage") == 2
    assert sample(after, "kg_tool_errors_total", tool="trace_decision_lineage") == 1
    assert sample(after, "kg_tool_errors_total", tool=tool) == 0
    assert sample(after, "kg_tool_calls_total", tool="query_knowledge_graph") == 1
    # Every projection is caught up after the calls (the server tails the log).
    assert sample(after, "kg_projection_lag_events", projection="kg_nodes") == 0
    assert 'kg_projection_lag_events{projection="kg_nodes"}' in after

    # The spans of those calls, with the application's own inside the tool call's.
    spans = [
        json.loads(line)
        for line in (tmp_path / ".kg" / "spans.jsonl").read_text().splitlines()
        if line
    ]
    by_name: dict[str, list[dict[str, object]]] = {}
    for s in spans:
        by_name.setdefault(str(s["name"]), []).append(s)
    tools = [s["attributes"]["mcp.tool.name"] for s in by_name["mcp.tool"]]  # type: ignore[index]
    assert tools.count("build_context_graph") == 1 and "record_decision" in tools
    (build,) = by_name["kg.context.build"]
    parent = build["parent_id"]
    assert parent in {s["context"]["span_id"] for s in by_name["mcp.tool"]}  # type: ignore[index]
    assert by_name["kg.append"] and by_name["kg.search"]


def test_metrics_need_the_http_transport(tmp_path: Path) -> None:
    env = server_env("postgresql://nobody@127.0.0.1:1/unused")  # refused before it is opened
    for args, message in [
        (["--metrics"], "--metrics serves /metrics over HTTP: add --transport http"),
        (["--transport", "tcp"], "--transport 'tcp' is unknown: use stdio or http"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "kg.cli", "mcp", *args],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 1 and message in done.stderr, done.stderr
