"""Policies: what a context graph may contain, and what an agent may do with it.

A policy is a node (``policy:{id}``) created and changed by ``PolicyDefined`` events. It applies
to an entity when the entity has a GOVERNED_BY edge to it, or when its selector matches the
entity (node types and/or labels, or the whole project / tenant). Tenant isolation is not a
policy: it is enforced in SQL and cannot be switched off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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


@dataclass(frozen=True)
class Policy:
    policy_id: str
    name: str
    rule: PolicyRule
    project_id: str

    def selects(self, node_type: str, labels: Iterable[str]) -> bool:
        """Whether the selector (not an edge) makes this policy apply to such a node."""
        rule = self.rule
        if rule.scope in ("project", "tenant"):
            return True
        if not rule.node_types and not rule.labels:
            return False
        type_ok = not rule.node_types or node_type in rule.node_types
        label_ok = not rule.labels or bool(set(rule.labels) & set(labels))
        return type_ok and label_ok


@dataclass
class NodeVerdict:
    """What the policies decided for one node."""

    denied_by: list[str] = field(default_factory=list)
    redacted_by: list[str] = field(default_factory=list)
    actions: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def denied(self) -> bool:
        return bool(self.denied_by)

    @property
    def redacted(self) -> bool:
        return bool(self.redacted_by) and not self.denied
