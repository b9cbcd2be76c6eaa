"""Policy events. A policy is projected as a ``Policy`` node whose properties hold its rule."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kg.events.base import DomainEvent
from kg.events.knowledge import NodeId

Effect = Literal["deny", "redact", "allow_actions"]
EFFECTS: tuple[str, ...] = ("deny", "redact", "allow_actions")


class PolicyRule(BaseModel):
    """The rule a Policy node carries in its properties."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    effect: Effect
    actions: tuple[str, ...] = Field(
        default=(), description="Tools/operations allowed (allow_actions)"
    )
    node_types: tuple[str, ...] = Field(default=(), description="Applies to nodes of these types")
    labels: tuple[str, ...] = Field(
        default=(), description="Applies to nodes with any of these labels"
    )
    scope: Literal["selected", "project", "tenant"] = Field(
        default="selected",
        description="'selected': GOVERNED_BY edges and the type/label selector; 'project' or "
        "'tenant': every node of the project or of every project of the tenant",
    )

    @model_validator(mode="after")
    def _actions_match_effect(self) -> PolicyRule:
        if self.effect == "allow_actions" and not self.actions:
            raise ValueError("an allow_actions policy must list at least one action")
        if self.effect != "allow_actions" and self.actions:
            raise ValueError(f"a {self.effect} policy cannot list actions")
        return self


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
