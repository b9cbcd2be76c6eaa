"""Context-graph events: what an agent was shown, and what it used (invariant 7)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kg.events.base import DomainEvent


class ContextGraphBuilt(DomainEvent):
    """A context graph was handed out. With the log up to ``as_of_position`` and ``request``, the
    same graph (same ``content_hash``) can be derived again at any later time."""

    event_type = "ContextGraphBuilt"

    context_graph_id: str
    mode: str
    request: dict[str, Any]
    as_of_position: int = Field(ge=0)
    node_ids: tuple[str, ...]
    edge_ids: tuple[str, ...]
    content_hash: str
    policies_applied: tuple[str, ...] = ()
    excluded_count: int = 0
    redacted_count: int = 0
    semantic_anchors: tuple[tuple[str, float], ...] = ()
    embedder: str | None = None
    token_estimate: int = 0
    # The builder algorithm that made it (kg.context.builder.BUILDER_VERSION); events logged
    # before the field existed were built by version 1.
    builder_version: int = 1


class ContextGraphUsed(DomainEvent):
    """A tool call used (part of) a context graph."""

    event_type = "ContextGraphUsed"

    context_graph_id: str
    tool_call_id: str = Field(min_length=1, max_length=200)
    usage_type: str = Field(default="read", min_length=1, max_length=50)
    node_ids: tuple[str, ...] = ()
