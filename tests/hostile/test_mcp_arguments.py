"""Hostile tool arguments over a real stdio MCP session (``kg mcp``, the SDK's client).

Each call must come back as a tool error that names the argument (and the session must keep
working): no bare ``Error executing tool X``, no traceback, no more than a bounded echo of
what was sent, nothing of a denied node; and the log must still verify afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import Implementation

from kg.audit.verify import verify_tenant
from kg.runtime import Runtime
from tests.mcp.client import (
    READ_TIMEOUT,
    call,
    error_text,
    http_server,
    ok,
    server_env,
    stdio_session,
    text_of,
)

HUGE = "x" * 10_000_000
# (tool, arguments, what the error must say)
CASES: list[tuple[str, dict[str, Any], str]] = [
    ("query_knowledge_graph", {"text": "pay\x00ments"}, "'text': Value error, contains a NUL"),
    ("build_context_graph", {"anchors": ["component:a\x00b"]}, "'anchors.0'"),
    ("build_context_graph", {"task": "pay\x00", "mode": "semantic"}, "'task': Value error"),
    ("record_decision", {"text": "x", "session_id": "s\x001"}, "'session_id': Value error"),
    ("record_decision", {"text": "x", "references": ["a\x00"]}, "'references.0'"),
    ("record_context_usage", {"context_graph_id": "cg\x00"}, "'context_graph_id'"),
    ("trace_decision_lineage", {"decision_id": "d\x00"}, "'decision_id'"),
    ("get_entity_neighbors", {"node_id": "n\x00"}, "'node_id'"),
    ("find_path", {"source": "component:checkout", "target": "t\x00"}, "'target'"),
    ("ingest_markdown", {"paths": ["docs/\x00.md"]}, "'paths.0'"),
    ("lint_graph", {"paths": ["a\x00"]}, "'paths.0'"),
    ("get_entity_neighbors", {"node_id": HUGE}, "at most 1100 characters"),
    ("ingest_markdown", {"paths": [HUGE]}, "at most 4096 characters"),
    ("query_knowledge_graph", {"text": HUGE}, "at most 4000 characters"),
    ("record_decision", {"text": HUGE}, "at most 20000 characters"),
    ("get_entity_neighbors", {"node_id": "component:" + "z" * 1000}, "not found"),
    ("build_context_graph", {"anchors": ["project:shop"], "max_nodes": -1}, "'max_nodes'"),
    ("build_context_graph", {"anchors": ["project:shop"], "max_nodes": 10**30}, "'max_nodes'"),
    ("build_context_graph", {"anchors": ["project:shop"], "max_depth": 1e308}, "'max_depth'"),
    ("build_context_graph", {"anchors": "project:shop"}, "'anchors'"),
    ("build_context_graph", {"anchors": [42]}, "'anchors.0'"),
    ("build_context_graph", {"anchors": ["project:shop"], "mode": "telepathy"}, "'mode'"),
    ("query_knowledge_graph", {"text": "x", "mode": "\x00"}, "'mode'"),
    ("query_knowledge_graph", {"text": "x", "limit": "ten"}, "'limit'"),
    ("record_decision", {"text": "x", "confidence": -0.5}, "'confidence'"),
    ("trace_decision_lineage", {"decision_id": "x", "depth": -(2**63)}, "'depth'"),
    ("get_entity_neighbors", {"node_id": "component:vault"}, "denied by policy"),
    ("record_decision", {"text": "x", "references": ["component:vault-nope"] * 50}, "not found"),
]


async def test_each_hostile_argument_gets_a_clear_error(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    """The whole catalogue on one session (a server per case would take minutes); every
    failing case is listed, not only the first."""
    failures = []
    async with stdio_session(server_env(db_url), tmp_path) as session:
        for tool, arguments, expected in CASES:
            result = await call(session, tool, **arguments)
            shown = (tool, {k: str(v)[:40] for k, v in arguments.items()}, text_of(result)[:300])
            if not result.is_error:
                failures.append(("accepted", *shown))
                continue
            message = error_text(result)
            if expected not in message:
                failures.append(("missing " + repr(expected), *shown))
            if message == f"Error executing tool {tool}":
                failures.append(("bare error", *shown))
            if "Traceback" in message or "VAULT-SECRET" in message:
                failures.append(("leak", *shown))
            if len(message) > 2500:
                failures.append((f"{len(message)} characters echoed", *shown))
            # The session keeps working after each one.
            ok(await call(session, "build_context_graph", anchors=["project:shop"], max_depth=0))
    assert not failures, "\n".join(map(str, failures))
    verified = await verify_tenant(shop.app_pool, shop.scope.tenant_id)
    assert verified.ok, str(verified)


async def test_a_client_whose_name_holds_control_characters_can_still_write(
    shop: Runtime, db_url: str, tmp_path: Path, system_pool: asyncpg.Pool
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kg.cli", "mcp"], env=server_env(db_url), cwd=tmp_path
    )
    client = Implementation(name="evil\x00agent\x1b[31m\ud800", version="1")
    with (
        open(tmp_path / "server.err", "w+") as errlog,  # noqa: ASYNC230
        pytest.raises(BaseException) as refused,
    ):
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=client, read_timeout_seconds=READ_TIMEOUT
            ) as session,
        ):
            await session.initialize()
    # The SDK's own client cannot even send a lone surrogate: it fails to encode the request
    # and tears the session down (another client can: see the raw test below).
    assert "surrogates not allowed" in "".join(traceback.format_exception(refused.value))
    client = Implementation(name="evil\x00agent\x1b[31m", version="1")
    with open(tmp_path / "server.err", "w+") as errlog:  # noqa: ASYNC230
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=client, read_timeout_seconds=READ_TIMEOUT
            ) as session,
        ):
            await session.initialize()
            recorded = ok(await call(session, "record_decision", text="names are sanitised"))
    actor = await system_pool.fetchval(
        "SELECT metadata->>'actor' FROM kg_events WHERE stream_id = $1", recorded["node_id"]
    )
    assert actor == "mcp:evil agent [31m"
    assert (await verify_tenant(shop.app_pool, shop.scope.tenant_id)).ok


def _initialize(name: str = "raw") -> str:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1"},
            },
        }
    )


async def test_a_lone_surrogate_sent_raw_gets_an_error_reply(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    """What the SDK's client refuses to send, another client may: ``"\\ud800"`` is valid JSON
    syntax. The SDK's server transport fails to parse it and used to drop it silently (no
    reply ever); kg answers it with a tool error naming the argument, and keeps serving."""
    lines = [
        _initialize(),
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_knowledge_graph",'
        '"arguments":{"text":"a\\ud800b"}}}',
        '{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"kg://\\udc00"}}',
        '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"query_knowledge_graph",'
        '"arguments":{"text":"gateway","mode":"fulltext"}}}',
    ]
    command = [sys.executable, "-m", "kg.cli", "mcp"]
    async with await anyio.open_process(
        command, env=server_env(db_url), cwd=tmp_path, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        await proc.stdin.send(("\n".join(lines) + "\n").encode())
        replies: dict[int, dict[str, Any]] = {}
        buffer = b""
        with anyio.fail_after(READ_TIMEOUT):
            while len(replies) < 4:
                buffer += await proc.stdout.receive()
                *complete, buffer = buffer.split(b"\n")
                for line in complete:
                    reply = json.loads(line)
                    replies[reply["id"]] = reply
        await proc.stdin.aclose()
        with anyio.fail_after(60):
            await proc.wait()
    tool_error = replies[2]["result"]
    assert tool_error["isError"] is True
    text = tool_error["content"][0]["text"]
    assert "argument 'text' contains a lone UTF-16 surrogate (\\ud800)" in text, text
    assert replies[3]["error"]["code"] == -32602
    assert "params" in replies[3]["error"]["message"] or "uri" in replies[3]["error"]["message"]
    assert replies[4]["result"].get("isError") is not True, "the session kept working"


async def test_a_lone_surrogate_over_http_gets_the_sdks_parse_error(
    db_url: str, tmp_path: Path
) -> None:
    """Over streamable HTTP the SDK itself answers the unparseable body (HTTP 400, JSON-RPC
    parse error with a null id): an answer, though one that cannot name the argument."""
    import httpx

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with http_server(server_env(db_url), tmp_path) as url, httpx.AsyncClient() as http:
        init = await http.post(url, headers=headers, content=_initialize())
        assert init.status_code == 200
        session = {**headers, "mcp-protocol-version": "2025-06-18"}
        if "mcp-session-id" in init.headers:
            session["mcp-session-id"] = init.headers["mcp-session-id"]
        body = (
            '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":'
            '"query_knowledge_graph","arguments":{"text":"a\\ud800b"}}}'
        )
        reply = await http.post(url, headers=session, content=body, timeout=READ_TIMEOUT)
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == -32700
