"""Directive events: which project rules an agent was given for a task (issue 20).

Like ``ContextGraphBuilt``, a served set of directives is logged so that the trail shows which
rules were in front of an agent when it decided something.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from kg.events.base import DomainEvent


class DirectivesServed(DomainEvent):
    """``query_directives`` handed these directives (in this order) to an agent."""

    event_type = "DirectivesServed"

    served_id: str = Field(min_length=1, max_length=200)
    request: dict[str, Any]
    detected: dict[str, Any]
    as_of_position: int = Field(ge=0)
    directive_ids: tuple[str, ...]
    content_hash: str
    considered: int = Field(ge=0)
    cut_by_budget: int = Field(ge=0)
    excluded_count: int = 0
    redacted_count: int = 0
    policies_applied: tuple[str, ...] = ()
    token_estimate: int = 0
