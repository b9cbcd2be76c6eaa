"""Policy events. A policy is projected as a ``Policy`` node whose properties hold its rule.

Version 2 of ``PolicyDefined`` added selectors by path glob and explicit node id, the actors an
``allow_actions`` policy grants its actions to, and the policy's ``origin`` (the policy file
that declares it, empty for one written through the API). ``PolicyChanged`` says the same as
``PolicyDefined`` for a policy that already existed; ``ActionRefused`` records a tool call or
command that a policy refused, so a reviewer sees attempted actions too.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kg.events.base import DomainEvent, upcaster
from kg.events.knowledge import NodeId

Effect = Literal["deny", "redact", "allow_actions"]
EFFECTS: tuple[str, ...] = ("deny", "redact", "allow_actions")

_Strings = tuple[str, ...]


class PolicyRule(BaseModel):
    """The rule a Policy node carries in its properties."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    effect: Effect
    actions: _Strings = Field(default=(), description="Tools/operations allowed (allow_actions)")
    node_types: _Strings = Field(default=(), description="Applies to nodes of these types")
    labels: _Strings = Field(default=(), description="Applies to nodes with any of these labels")
    paths: _Strings = Field(
        default=(),
        description="Applies to nodes of files matching any of these project-relative globs "
        "('docs/legal/**')",
    )
    node_ids: _Strings = Field(default=(), description="Applies to exactly these nodes")
    actors: _Strings = Field(
        default=(),
        description="allow_actions: who is granted the actions ('mcp:claude-*', 'cli:*'). A "
        "policy naming actors gates the actions it governs; without actors it only informs",
    )
    scope: Literal["selected", "project", "tenant"] = Field(
        default="selected",
        description="'selected': GOVERNED_BY edges and the selectors; 'project' or "
        "'tenant': every node of the project or of every project of the tenant",
    )

    @model_validator(mode="after")
    def _actions_match_effect(self) -> PolicyRule:
        if self.effect == "allow_actions" and not self.actions:
            raise ValueError("an allow_actions policy must list at least one action")
        if self.effect != "allow_actions" and self.actions:
            raise ValueError(f"a {self.effect} policy cannot list actions")
        if self.effect != "allow_actions" and self.actors:
            raise ValueError(f"a {self.effect} policy cannot list actors (it applies to everyone)")
        return self


class PolicyDefined(DomainEvent):
    """A policy exists with exactly this rule (created, or changed: the full new rule)."""

    event_type = "PolicyDefined"
    schema_version = 2

    policy_id: NodeId = Field(description="'policy:{id}'")
    name: str = Field(min_length=1, max_length=200)
    description: str = Field(default="", max_length=10_000)
    rule: PolicyRule
    origin: str = Field(
        default="", max_length=1000, description="The policy file declaring it ('' : the API)"
    )


@upcaster("PolicyDefined", 1)
def _policy_defined_v1(payload: dict[str, Any]) -> dict[str, Any]:
    """v1 had no path/node/actor selectors and no origin: all empty."""
    rule = {"paths": [], "node_ids": [], "actors": [], **payload["rule"]}
    return {"origin": "", **payload, "rule": rule}


class PolicyChanged(PolicyDefined):
    """An existing policy now has exactly this rule (a policy file changed it)."""

    event_type = "PolicyChanged"
    schema_version = 1


class PolicyRetired(DomainEvent):
    event_type = "PolicyRetired"

    policy_id: NodeId
    reason: str = ""


class ActionRefused(DomainEvent):
    """A policy refused an actor an action (a tool call, a command) on some nodes."""

    event_type = "ActionRefused"

    actor: str = Field(min_length=1, max_length=300)
    action: str = Field(min_length=1, max_length=100)
    # The ids refused, as the caller named them (they may name nothing that exists).
    node_ids: tuple[Annotated[str, Field(max_length=1000)], ...] = Field(
        default=(), max_length=1000
    )
    policy_ids: tuple[NodeId, ...] = Field(default=(), max_length=1000)
    reason: str = Field(default="", max_length=2000)
