"""``kg mcp``: serve the MCP tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import gc
from typing import cast

import typer

from kg.cli.common import fail, run
from kg.errors import KgError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def mcp(
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    host: str | None = typer.Option(
        None, help="HTTP bind address (default 127.0.0.1); beyond loopback a token is required."
    ),
    port: int | None = typer.Option(None, help="HTTP port (default 8765)."),
    token: str | None = typer.Option(
        None,
        envvar="KG_MCP_TOKEN",
        help="Bearer token HTTP clients must send (Authorization: Bearer <token>).",
        show_default=False,
    ),
    log_level: str = typer.Option("WARNING", help="Server log level (logs go to stderr)."),
) -> None:
    """Serve the MCP tools (build_context_graph, record_decision, ...) to an agent.

    Tenant and project come from KG_TENANT and KG_PROJECT, the database from
    KG_DATABASE_URL or the project's embedded one."""
    # Imported here: the SDK and uvicorn are not needed by the other kg commands.
    from mcp_server.transports import (
        DEFAULT_HOST,
        DEFAULT_PORT,
        check_binding,
        serve_http,
        serve_stdio,
    )

    level = log_level.upper()
    if level not in LOG_LEVELS:
        fail(f"--log-level {log_level!r} is unknown: use one of {', '.join(LOG_LEVELS)}")
    if not http and (host is not None or port is not None):
        fail("--host and --port apply to the HTTP transport: add --http")
    bind_host = host or DEFAULT_HOST
    bind_port = DEFAULT_PORT if port is None else port
    if not 0 < bind_port < 65536:
        fail(f"--port {bind_port} is out of range: use 1 to 65535")
    secret = (token or "").strip() or None
    if http:
        try:
            check_binding(bind_host, secret)  # before the database is even opened
        except KgError as exc:
            fail(str(exc))

    async def go() -> None:
        from kg.runtime import open_runtime
        from mcp_server.server import LogLevel, create_server

        # Opened here rather than in the server's lifespan so that a database problem is a
        # one-line error and exit 1, not a traceback from inside the transport.
        async with open_runtime() as rt:
            server = create_server(rt, log_level=cast(LogLevel, level))
            # What start-up loaded (the SDK, its pydantic schemas, the runtime: ~100k objects)
            # lives as long as the process. Frozen, it is no longer rescanned by the collector's
            # full passes, which the allocations of large results trigger now and then and
            # which took ~50 ms each here: a tool call's p95, not its p50.
            gc.freeze()
            if http:
                await serve_http(
                    server, host=bind_host, port=bind_port, token=secret, log_level=level
                )
            else:
                await serve_stdio(server)

    run(go)
