"""What every tool call gets from the server: the Runtime, and who is calling."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver import Context

from kg.events import EventMetadata
from kg.governance.enforce import require
from kg.runtime import Runtime
from kg.validation import without_controls

ACTOR_NAME_CHARS = 100


@dataclass(frozen=True)
class AppState:
    """What the lifespan yields: the process's one Runtime."""

    runtime: Runtime


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


async def guard(ctx: KgContext, action: str, node_ids: Sequence[str] = ()) -> None:
    """Refuse (and log) the call unless policies let this client run ``action`` on
    ``node_ids`` (:mod:`kg.policies.actions`); the tool's name is its action."""
    await require(runtime_of(ctx), actor_of(ctx), action, node_ids, metadata_of(ctx))
