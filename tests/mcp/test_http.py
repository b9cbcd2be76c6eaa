"""``kg mcp --http``: streamable HTTP with the SDK's client, and the bearer token."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from kg.runtime import Runtime
from tests.mcp.client import (
    TOOLS,
    call,
    error_text,
    http_server,
    http_session,
    ok,
    server_env,
)
from tests.mcp.turn import agent_turn

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def test_worked_example_over_http_with_a_bearer_token(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with http_server(server_env(db_url), tmp_path, "--token", "s3cret-token") as url:
        async with httpx.AsyncClient() as http:
            for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
                refused = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **auth})
                assert refused.status_code == 401, auth
                assert "s3cret" not in refused.text
            assert (await http.get(url.replace("/mcp", "/anything"))).status_code == 401
            accepted = await http.post(
                url,
                json=INITIALIZE,
                headers={**MCP_HEADERS, "Authorization": "Bearer s3cret-token"},
            )
            assert accepted.status_code == 200
        with pytest.raises(ExceptionGroup) as without_token:
            async with http_session(url):
                pass
        assert without_token.group_contains(MCPError)

        async with http_session(url, token="s3cret-token") as session:
            assert {t.name for t in (await session.list_tools()).tools} == TOOLS
            turn = await agent_turn(session)
            message = error_text(
                await call(session, "trace_decision_lineage", decision_id="missing")
            )
            assert "not found" in message
            lineage = ok(
                await call(
                    session,
                    "trace_decision_lineage",
                    decision_id=turn["decision"]["decision_id"],
                    direction="both",
                )
            )
            assert lineage["direction"] == "both"


async def test_two_http_clients_share_one_server(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with (
        http_server(server_env(db_url), tmp_path) as url,
        http_session(url) as first,
        http_session(url) as second,
    ):
        async with httpx.AsyncClient() as http:  # DNS-rebinding protection on loopback
            rebound = {**MCP_HEADERS, "Host": "attacker.example"}
            assert (await http.post(url, json=INITIALIZE, headers=rebound)).status_code == 421
            foreign = {**MCP_HEADERS, "Origin": "http://attacker.example"}
            assert (await http.post(url, json=INITIALIZE, headers=foreign)).status_code == 403
        graph = ok(await call(first, "build_context_graph", anchors=["adr:0007"]))
        decision = ok(
            await call(
                second,
                "record_decision",
                text="Keep ADR-0007",
                context_graph_ids=[graph["context_graph_id"]],
            )
        )
        assert "adr:0007" in decision["informed_by"]


def kg_mcp(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", "mcp", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.10", "example.com"])
def test_a_non_loopback_host_without_a_token_is_refused(host: str, tmp_path: Path) -> None:
    env = server_env("postgresql://nobody@127.0.0.1:1/never-opened")
    out = kg_mcp("--http", "--host", host, env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert f"refusing to serve MCP over HTTP on {host} without a bearer token" in out.stderr
    assert "KG_MCP_TOKEN" in out.stderr and "Traceback" not in out.stderr


def test_host_without_http_and_a_bad_database_are_plain_errors(tmp_path: Path) -> None:
    env = server_env("postgresql://bob:pw@127.0.0.1:1/nowhere")
    out = kg_mcp("--host", "127.0.0.1", env=env, cwd=tmp_path)
    assert out.returncode == 1 and "add --http" in out.stderr
    down = kg_mcp(env=env, cwd=tmp_path)
    assert down.returncode == 1 and "cannot connect to postgresql://bob:***@" in down.stderr
    assert "Traceback" not in down.stderr and "pw@" not in down.stderr


async def test_token_from_the_environment_allows_any_host(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    env = {**server_env(db_url), "KG_MCP_TOKEN": "env-token"}
    async with http_server(env, tmp_path, "--host", "0.0.0.0") as url:
        async with httpx.AsyncClient() as http:
            refused = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
            assert refused.status_code == 401
        async with http_session(url, token="env-token") as session:
            ok(await call(session, "get_entity_neighbors", node_id="component:checkout"))
