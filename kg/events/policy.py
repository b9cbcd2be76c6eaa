"""Policy events. A policy is projected as a ``Policy`` node whose properties hold its rule."""

from __future__ import annotations

from pydantic import Field

from kg.events.base import DomainEvent
from kg.events.knowledge import NodeId
from kg.policies.model import PolicyRule


class PolicyDefined(DomainEvent):
    """A policy exists with exactly this rule (created, or changed: the full new rule)."""

    event_type = "PolicyDefined"

    policy_id: NodeId = Field(description="'policy:{id}'")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    rule: PolicyRule


class PolicyRetired(DomainEvent):
    event_type = "PolicyRetired"

    policy_id: NodeId
    reason: str = ""
