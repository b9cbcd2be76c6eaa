"""Real MCP clients for the tests: the SDK's ClientSession over stdio (spawning ``kg mcp``) and
over streamable HTTP, plus helpers to read tool results."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession, MessageHandlerFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp_types import CallToolResult, Implementation, TextContent

CLIENT = Implementation(name="pytest-agent", version="1.0")
# Every request gets an answer within this or fails the test (a lost reply must not hang CI).
READ_TIMEOUT = 120.0
TOOLS = {
    "build_context_graph",
    "record_context_usage",
    "record_decision",
    "trace_decision_lineage",
    "query_knowledge_graph",
    "get_entity_neighbors",
    "get_node",
    "find_path",
    "ingest_markdown",
    "lint_graph",
    "detect_context",
    "query_directives",
}


def server_env(db_url: str) -> dict[str, str]:
    """The server's environment: the per-test database, the fixtures' scope, the fast embedder."""
    env = {k: v for k, v in os.environ.items() if k != "KG_MCP_TOKEN"}
    return {
        **env,
        "KG_DATABASE_URL": db_url,
        "KG_TENANT": "acme",
        "KG_PROJECT": "webshop",
        "KG_EMBEDDER": "hashing",
    }


@asynccontextmanager
async def stdio_session(
    env: dict[str, str], cwd: Path, *args: str, message_handler: MessageHandlerFnT | None = None
) -> AsyncIterator[ClientSession]:
    """``python -m kg.cli mcp [args]`` as a subprocess, and an initialised session with it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kg.cli", "mcp", *args], env=env, cwd=cwd
    )
    # A real file for the server's stderr (pytest's capture may not have a file descriptor).
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read,
                write,
                client_info=CLIENT,
                read_timeout_seconds=READ_TIMEOUT,
                message_handler=message_handler,
            ) as session,
        ):
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(
    url: str, token: str | None = None, message_handler: MessageHandlerFnT | None = None
) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(
            read,
            write,
            client_info=CLIENT,
            read_timeout_seconds=READ_TIMEOUT,
            message_handler=message_handler,
        ) as session,
    ):
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@asynccontextmanager
async def http_server(env: dict[str, str], cwd: Path, *args: str) -> AsyncIterator[str]:
    """``kg mcp --http`` on a free port; yields its URL once it accepts connections, and stops
    it with SIGTERM (a graceful shutdown) afterwards."""
    port = free_port()
    command = [sys.executable, "-m", "kg.cli", "mcp", "--http", "--port", str(port), *args]
    with tempfile.TemporaryFile("w+") as errlog:
        async with await anyio.open_process(
            command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errlog
        ) as proc:
            try:
                with anyio.fail_after(60):
                    while not await _accepts(port):
                        if proc.returncode is not None:
                            errlog.seek(0)
                            raise AssertionError(f"kg mcp --http exited: {errlog.read()}")
                        await anyio.sleep(0.1)
                yield f"http://127.0.0.1:{port}/mcp"
            finally:
                if proc.returncode is None:
                    proc.terminate()
                with anyio.move_on_after(30):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
            errlog.seek(0)
            assert proc.returncode == 0, f"no clean shutdown on SIGTERM: {errlog.read()}"


async def _accepts(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def ok(result: CallToolResult) -> dict[str, Any]:
    """The structured result of a successful call (its text being the same data or, for the
    context graph, the rendering)."""
    assert not result.is_error, text_of(result)
    assert result.structured_content is not None
    return dict(result.structured_content)


def error_text(result: CallToolResult) -> str:
    assert result.is_error, f"expected a tool error, got {json.dumps(result.structured_content)}"
    return text_of(result)


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    return await session.call_tool(tool, arguments)
