"""What every tool call gets from the server: the Runtime, and who is calling."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.server.mcpserver import Context

from kg.events import EventMetadata, written
from kg.governance.enforce import require
from kg.runtime import Runtime
from kg.validation import without_controls

ACTOR_NAME_CHARS = 100


class SessionWrites:
    """Each client session's writes, for read-your-writes: its reads wait for these positions
    to be projected, never for other writers' backlog. Clients without a session id (stdio's
    one client, stateless HTTP requests) share one: a superset of their own, still only this
    server's writes."""

    MAX_SESSIONS = 10_000

    def __init__(self) -> None:
        self._sessionless = written.Writes()
        self._sessions: OrderedDict[str, written.Writes] = OrderedDict()

    def of(self, session_id: str | None) -> written.Writes:
        if session_id is None:
            return self._sessionless
        writes = self._sessions.pop(session_id, None) or written.Writes()
        self._sessions[session_id] = writes  # the most recent last; the oldest dropped
        if len(self._sessions) > self.MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return writes


@dataclass(frozen=True)
class AppState:
    """What the lifespan yields: the process's one Runtime, and its clients' writes."""

    runtime: Runtime
    writes: SessionWrites = field(default_factory=SessionWrites)


KgContext = Context[AppState, Any]


def runtime_of(ctx: KgContext) -> Runtime:
    state: AppState = ctx.request_context.lifespan_context
    return state.runtime


def actor_of(ctx: KgContext) -> str:
    """``mcp:<client name>`` from the client's ``clientInfo``, else ``mcp:agent``.

    The name is the client's to choose and is recorded in every event it causes, so control
    characters (a NUL cannot be stored) and lone surrogates become spaces rather than locking
    the client out of every write."""
    params = ctx.request_context.session.client_params
    name = without_controls(params.client_info.name) if params is not None else ""
    return f"mcp:{name[:ACTOR_NAME_CHARS] or 'agent'}"


def metadata_of(ctx: KgContext, session_id: str | None = None) -> EventMetadata:
    """Event metadata for a tool call: the actor, the agent's session, and the MCP request id
    (unique within the client's connection) as the tool call id."""
    request_id = ctx.request_context.request_id
    return EventMetadata(
        actor=actor_of(ctx),
        session_id=session_id,
        tool_call_id=None if request_id is None else str(request_id),
    )


def bind_session(ctx: KgContext | None) -> None:
    """Note the appends of this request in its client session's :class:`~kg.events.written.
    Writes`, and make its reads wait for that session's own writes (:mod:`kg.read.reader`).
    Bound in the request's own context, so it lasts as long as the request."""
    if ctx is None:
        return
    state: AppState = ctx.request_context.lifespan_context
    # The SDK's per-client connection (its ServerSession is made per request): an HTTP
    # session has an id; stdio's one client and stateless HTTP requests have none.
    connection = getattr(ctx.request_context.session, "_connection", None)
    written.bind(state.writes.of(getattr(connection, "session_id", None)))


async def guard(ctx: KgContext, action: str, node_ids: Sequence[str] = ()) -> None:
    """Refuse (and log) the call unless policies let this client run ``action`` on
    ``node_ids`` (:mod:`kg.policies.actions`); the tool's name is its action."""
    bind_session(ctx)
    await require(runtime_of(ctx), actor_of(ctx), action, node_ids, metadata_of(ctx))
