"""``kg mcp``: serve the MCP tools over stdio (default) or streamable HTTP; ``kg mcp config``:
the client configuration that starts it."""

from __future__ import annotations

import os
from pathlib import Path

import typer

from kg.cli.common import err_console, fail, run

mcp_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    help="Serve the MCP tools (build_context_graph, record_decision, ...) to an agent.",
)


@mcp_app.callback()
def mcp(
    ctx: typer.Context,
    http: bool = typer.Option(False, "--http", help="Serve streamable HTTP instead of stdio."),
    transport: str | None = typer.Option(
        None, "--transport", help="stdio (default) or http (the same as --http)."
    ),
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
    metrics: bool = typer.Option(
        False,
        "--metrics",
        help="HTTP only: serve Prometheus metrics at /metrics (tool latency, errors, served "
        "tokens, projection lag, embedder queue) and record OpenTelemetry spans.",
    ),
) -> None:
    """Serve the MCP tools (build_context_graph, record_decision, ...) to an agent.

    Tenant and project come from KG_TENANT and KG_PROJECT, the database from
    KG_DATABASE_URL or the project's embedded one."""
    if ctx.invoked_subcommand is not None:
        return
    if transport not in (None, "stdio", "http"):
        fail(f"--transport {transport!r} is unknown: use stdio or http")
    from mcp_server.serve import serve

    run(
        lambda: serve(
            http=http or transport == "http",
            host=host,
            port=port,
            token=token,
            log_level=log_level,
            memory_compat=memory_compat,
            metrics=metrics,
        )
    )


@mcp_app.command("config")
def config(
    client: str = typer.Option(
        ..., "--client", help="claude-code, claude-desktop, cursor or vscode."
    ),
    write: bool = typer.Option(
        False,
        "--write",
        help="Merge the kg server into the client's file (other servers are kept) instead of "
        "printing it.",
    ),
) -> None:
    """Print (or --write) an MCP client's configuration that starts kg for this project."""
    from kg.cli import mcp_config
    from kg.config import Settings
    from kg.errors import KgError

    try:
        chosen = mcp_config.client_named(client)
        root = Settings.from_env().project_root
        entry = mcp_config.server_entry(chosen, root, dict(os.environ))
        path = mcp_config.config_path(chosen, root, Path.home())
        if write:
            replaced = mcp_config.merge_into(path, chosen, entry)
            verb = "updated the kg server in" if replaced else "added the kg server to"
            err_console.print(f"{verb} {path}")
        else:
            typer.echo(mcp_config.render(chosen, entry), nl=False)
            err_console.print(f"# goes in {path} (or run with --write)")
    except KgError as exc:
        err_console.print(f"[bold red]error:[/] {exc}")
        raise typer.Exit(1) from None
    if os.environ.get("KG_DATABASE_URL"):
        err_console.print(
            "note: KG_DATABASE_URL is set but not written (it may hold a password): add it to "
            "the server's env in the client's configuration."
        )
