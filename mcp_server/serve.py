"""Start the MCP server: check the options, open the runtime, serve stdio or streamable HTTP.

The one implementation behind ``kg mcp`` (:mod:`kg.cli.mcp_command`) and ``python -m
mcp_server``; every problem with the options or the database is a :class:`KgError` raised
before anything is served, so each shell prints one line and exits 1.
"""

from __future__ import annotations

import contextlib
import gc
from typing import cast

from kg.errors import ValidationError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


async def serve(
    *,
    http: bool = False,
    host: str | None = None,
    port: int | None = None,
    token: str | None = None,
    log_level: str = "WARNING",
    memory_compat: bool = False,
    metrics: bool = False,
) -> None:
    # Imported here: the SDK and uvicorn are not needed before the options are checked.
    from mcp_server.transports import (
        DEFAULT_HOST,
        DEFAULT_PORT,
        check_binding,
        serve_http,
        serve_stdio,
    )

    level = log_level.upper()
    if level not in LOG_LEVELS:
        raise ValidationError(
            f"--log-level {log_level!r} is unknown: use one of {', '.join(LOG_LEVELS)}"
        )
    if not http and (host is not None or port is not None):
        raise ValidationError("--host and --port apply to the HTTP transport: add --http")
    if metrics and not http:
        raise ValidationError(
            "--metrics serves /metrics over HTTP: add --transport http (or --http)"
        )
    bind_host = host or DEFAULT_HOST
    bind_port = DEFAULT_PORT if port is None else port
    if not 0 < bind_port < 65536:
        raise ValidationError(f"--port {bind_port} is out of range: use 1 to 65535")
    secret = (token or "").strip() or None
    if http:
        check_binding(bind_host, secret)  # before the database is even opened

    from kg.host.database import open_runtime
    from mcp_server.server import LogLevel, create_server

    # Opened here rather than in the server's lifespan so that a database problem is a
    # one-line error and exit 1, not a traceback from inside the transport.
    async with open_runtime() as rt, contextlib.AsyncExitStack() as stack:
        measured = None
        if metrics:
            from mcp_server.metrics import Metrics, spans_recorded

            measured = Metrics(rt)
            stack.enter_context(spans_recorded(rt.settings.state_dir))
        server = create_server(
            rt, log_level=cast(LogLevel, level), memory_compat=memory_compat, metrics=measured
        )
        # What start-up loaded (the SDK, its pydantic schemas, the runtime: ~100k objects)
        # lives as long as the process. Frozen, it is no longer rescanned by the collector's
        # full passes, which the allocations of large results trigger now and then and which
        # took ~50 ms each here: a tool call's p95, not its p50.
        gc.freeze()
        if http:
            await serve_http(server, host=bind_host, port=bind_port, token=secret, log_level=level)
        else:
            await serve_stdio(server)
