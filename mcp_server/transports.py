"""Serving the server: stdio (one client, the parent process) or streamable HTTP."""

from __future__ import annotations

import ipaddress
import signal
import socket
import sys

import anyio
import uvicorn
from starlette.types import ASGIApp

from kg.errors import ConfigurationError
from mcp_server.auth import BearerTokenMiddleware
from mcp_server.metrics import METRICS_PATH, MetricsApp
from mcp_server.server import KgMCPServer
from mcp_server.stdio import StdinLines

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name other than localhost: may resolve anywhere
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve beyond this machine without a bearer token."""
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to serve MCP over HTTP on {host} without a bearer token: anyone who can "
            "reach the port could read and write this project's knowledge graph. Pass --token "
            "or set KG_MCP_TOKEN (clients then send 'Authorization: Bearer <token>'), or bind to "
            "127.0.0.1."
        )


def http_app(server: KgMCPServer, *, host: str, token: str | None) -> ASGIApp:
    """The streamable-HTTP app at ``/mcp`` (DNS-rebinding protection on for loopback hosts),
    behind the bearer-token check when a token is configured."""
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if server.metrics is not None:
        app = MetricsApp(app, server.metrics)
    return BearerTokenMiddleware(app, token) if token else app


class _Uvicorn(uvicorn.Server):
    """Says on stderr where it serves, once it really does (the socket is bound)."""

    def __init__(self, config: uvicorn.Config, banner: str) -> None:
        super().__init__(config)
        self.banner = banner

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            print(self.banner, file=sys.stderr, flush=True)


async def serve_http(
    server: KgMCPServer, *, host: str, port: int, token: str | None, log_level: str
) -> None:
    """Serve until SIGINT or SIGTERM."""
    check_binding(host, token)
    config = uvicorn.Config(
        http_app(server, host=host, token=token),
        host=host,
        port=port,
        lifespan="on",
        log_level=log_level.lower(),
    )
    shown = f"[{host}]" if ":" in host else host
    auth = "bearer token required" if token else "no token: loopback only"
    banner = f"kg mcp: streamable HTTP on http://{shown}:{port}{MCP_PATH} ({auth})"
    if server.metrics is not None:
        banner += f"; Prometheus metrics on http://{shown}:{port}{METRICS_PATH}"
    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again for the
    # handler it found. Let that be a no-op, so the process goes on to close the Runtime and
    # exit normally instead of dying before its cleanup.
    stopping = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in stopping}
    try:
        await _Uvicorn(config, banner).serve()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


async def serve_stdio(server: KgMCPServer) -> None:
    """Serve until the client closes stdin, or SIGTERM/SIGINT arrive (then shut down cleanly,
    so the Runtime's pools close and an embedded database can stop)."""
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        await server.run_stdio_lines(StdinLines())
        tg.cancel_scope.cancel()
