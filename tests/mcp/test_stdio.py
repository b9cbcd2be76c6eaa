"""The MCP server as an agent meets it: ``kg mcp`` spawned over stdio, the SDK's client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest

from kg.context.request import ContextRequest
from kg.runtime import Runtime
from tests.mcp.client import TOOLS, call, error_text, ok, server_env, stdio_session, text_of
from tests.mcp.turn import agent_turn


async def test_lists_the_tools_with_input_and_output_schemas(db_url: str, tmp_path: Path) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        listed = await session.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        assert "ctx" not in tool.input_schema["properties"]

    build = tools["build_context_graph"].input_schema["properties"]
    assert build["mode"]["anyOf"][0]["enum"] == ["anchor", "semantic", "policy_first"]
    assert build["anchors"]["type"] == "array"
    # The published bounds are the application's own.
    request = ContextRequest.model_json_schema()["properties"]

    def bounds(schema: dict[str, Any]) -> tuple[int, int]:
        numeric = next((s for s in schema.get("anyOf", [schema]) if "minimum" in s), schema)
        return numeric["minimum"], numeric["maximum"]

    for name in ("max_nodes", "max_depth", "semantic_k", "token_budget"):
        assert bounds(build[name]) == bounds(request[name]), name
    assert "tenant" not in str(tools) and "project_id" not in str(build)
    assert tools["trace_decision_lineage"].input_schema["required"] == ["decision_id"]
    assert tools["find_path"].input_schema["required"] == ["source", "target"]
    assert tools["query_knowledge_graph"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["record_decision"].annotations.destructive_hint is False  # type: ignore[union-attr]


async def test_worked_example_end_to_end_and_the_events_it_leaves(
    shop: Runtime, db_url: str, tmp_path: Path, system_pool: asyncpg.Pool
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        turn = await agent_turn(session)
        again = ok(
            await call(
                session,
                "record_context_usage",
                context_graph_id=turn["graph"]["context_graph_id"],
                tool_call_id="edit-1",
                usage_type="edit",
                node_ids=["component:payments", "adr:0007"],
            )
        )
        assert again["duplicate"] is True and again["position"] == turn["usage"]["position"]

    rows = await system_pool.fetch(
        "SELECT event_type, stream_id, metadata FROM kg_events "
        "WHERE event_type IN ('ContextGraphBuilt', 'ContextGraphUsed', 'DecisionRecorded') "
        "ORDER BY position"
    )
    assert [r["event_type"] for r in rows] == [
        "ContextGraphBuilt",
        "ContextGraphUsed",
        "DecisionRecorded",
    ]
    for row in rows:
        meta = row["metadata"]
        meta = json.loads(meta) if isinstance(meta, str) else meta
        assert meta["actor"] == "mcp:pytest-agent"
        assert meta["session_id"] == "s-42"
        assert meta["tool_call_id"]  # the MCP request id
    assert rows[2]["stream_id"] == turn["decision"]["node_id"]


async def test_tool_errors_carry_the_message_and_the_session_keeps_working(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("build_context_graph", {"anchors": ["component:nope"]}, "component:nope not found"),
        ("build_context_graph", {"anchors": ["project:shop"], "mode": "bogus"}, "field 'mode'"),
        ("build_context_graph", {"anchors": ["project:shop"], "max_nodes": -1}, "'max_nodes'"),
        ("build_context_graph", {"anchors": ["project:shop"], "token_budget": -5}, "token_budget"),
        ("build_context_graph", {"mode": "anchor"}, "needs at least one anchor"),
        ("record_context_usage", {"context_graph_id": "cg_missing"}, "cg_missing' not found"),
        ("record_decision", {"text": "x", "context_graph_ids": ["cg_gone"]}, "cg_gone not found"),
        ("trace_decision_lineage", {"decision_id": "nope"}, "not found"),
        ("trace_decision_lineage", {"decision_id": "x", "depth": 0}, "'depth'"),
        ("query_knowledge_graph", {"text": "gateway", "limit": 1000}, "'limit'"),
        ("get_entity_neighbors", {"node_id": "component:vault"}, "denied by policy"),
        ("find_path", {"source": "component:checkout"}, "'target'"),
        ("no_such_tool", {}, "Unknown tool"),
    ]
    async with stdio_session(server_env(db_url), tmp_path) as session:
        for tool, arguments, expected in cases:
            message = error_text(await call(session, tool, **arguments))
            assert expected in message, (tool, arguments, message)
            assert "Traceback" not in message and "VAULT-SECRET" not in message
            # The next call on the same session works.
            ok(await call(session, "build_context_graph", anchors=["project:shop"], max_depth=0))


async def test_semantic_is_the_default_mode_for_a_task_alone(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        result = await call(
            session, "build_context_graph", task="card payments gateway", max_nodes=3
        )
    graph = ok(result)
    assert graph["mode"] == "semantic" and graph["semantic_anchors"]
    assert len(graph["nodes"]) <= 3 and graph["budget"]["max_nodes"] == 3
    assert graph["embedder"] and graph["warnings"], "the hashing fallback is announced"
    assert "warning:" in text_of(result)


async def test_search_neighbours_and_paths_are_policy_checked(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        found = ok(await call(session, "query_knowledge_graph", text="gateway", mode="fulltext"))
        near = ok(
            await call(session, "get_entity_neighbors", node_id="component:payments", limit=2)
        )
        path = ok(
            await call(
                session, "find_path", source="component:checkout", target="document:card-data"
            )
        )
        blocked = ok(
            await call(session, "find_path", source="component:checkout", target="component:hsm")
        )
    assert {"adr:0007", "component:payments"} <= {r["node_id"] for r in found["results"]}
    assert near["node"]["node_id"] == "component:payments"
    assert len(near["neighbors"]) == 2 and near["truncated"] is True
    assert [n["node_id"] for n in path["nodes"]] == [
        "component:checkout",
        "component:payments",
        "document:card-data",
    ]
    assert path["nodes"][2]["redacted"] is True and "CARD-CONTENT" not in str(path)
    assert blocked["found"] is False, "the only way to the HSM is through the denied vault"


@pytest.mark.parametrize("stop", ["close stdin", "SIGTERM", "SIGINT"])
async def test_the_stdio_server_stops_cleanly(stop: str, db_url: str, tmp_path: Path) -> None:
    """Exit status 0 (pools closed, atexit handlers run) however the client stops it."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    command = [sys.executable, "-m", "kg.cli", "mcp"]
    async with await anyio.open_process(
        command, env=server_env(db_url), cwd=tmp_path, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        await proc.stdin.send((json.dumps(initialize) + "\n").encode())
        with anyio.fail_after(60):
            reply = await proc.stdout.receive()
        assert json.loads(reply.decode().splitlines()[0])["id"] == 1
        if stop == "close stdin":
            await proc.stdin.aclose()
        else:
            proc.send_signal(signal.SIGTERM if stop == "SIGTERM" else signal.SIGINT)
        with anyio.fail_after(60):
            assert await proc.wait() == 0
