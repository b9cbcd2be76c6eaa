"""Log messages to the client (``notifications/message``) at the level it asked for.

Clients on protocol versions up to 2025-11-25 choose a session-wide level with
``logging/setLevel``; the SDK leaves filtering to the server, which keeps the level here per
session (nothing is sent before a client asks). From 2026-07-28 a request carries its own
level in ``_meta`` and the SDK filters; :func:`log` then passes every message on.
"""

from __future__ import annotations

import weakref
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types import EmptyResult, LoggingLevel, SetLevelRequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_server.state import AppState, KgContext

LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
_chosen: weakref.WeakKeyDictionary[Any, LoggingLevel] = weakref.WeakKeyDictionary()


async def set_level(
    ctx: ServerRequestContext[AppState], params: SetLevelRequestParams
) -> EmptyResult:
    """``logging/setLevel``: messages at ``params.level`` and above, for this session."""
    _chosen[_connection(ctx.session)] = params.level
    return EmptyResult()


def _connection(session: Any) -> Any:
    # A ServerSession is made per request; the connection under it lives as long as the
    # client's session does (the SDK offers no public handle for it).
    return getattr(session, "_connection", session)


def wanted(session: Any, level: LoggingLevel, *, legacy: bool) -> bool:
    """Whether a message at ``level`` goes to this session."""
    if not legacy:
        return True  # the SDK applies the request's own level
    chosen = _chosen.get(_connection(session))
    return chosen is not None and LEVELS.index(level) >= LEVELS.index(chosen)


async def log(ctx: KgContext, level: LoggingLevel, message: str) -> None:
    """Tell the client what a tool is doing, if it wants to hear at ``level``."""
    session = ctx.request_context.session
    legacy = ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS
    if wanted(session, level, legacy=legacy):
        await ctx.log(level, message, logger_name="kg")
