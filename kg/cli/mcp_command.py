"""``kg mcp``: serve the MCP tools over stdio (default) or streamable HTTP."""

from __future__ import annotations

import typer

from kg.cli.common import run


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
    memory_compat: bool = typer.Option(
        False,
        "--memory-compat",
        help="Also serve the reference MCP memory server's tools (create_entities, read_graph, "
        "...), backed by the event log: a drop-in for @modelcontextprotocol/server-memory.",
    ),
) -> None:
    """Serve the MCP tools (build_context_graph, record_decision, ...) to an agent.

    Tenant and project come from KG_TENANT and KG_PROJECT, the database from
    KG_DATABASE_URL or the project's embedded one."""
    from mcp_server.serve import serve

    run(
        lambda: serve(
            http=http,
            host=host,
            port=port,
            token=token,
            log_level=log_level,
            memory_compat=memory_compat,
        )
    )
