"""Policies: what a context graph may contain, and what an agent may do with it.

A policy is a node (``policy:{id}``) created and changed by ``PolicyDefined`` events. It applies
to an entity when the entity has a GOVERNED_BY edge to it, or when its selector matches the
entity (node types and/or labels, or the whole project / tenant). Tenant isolation is not a
policy: it is enforced in SQL and cannot be switched off.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

# The rule is part of the PolicyDefined event's stored schema, so the write side owns it: a
# change to it is a change of an event schema (a version bump and an upcaster), not of policy
# evaluation alone.
from kg.events.policy import EFFECTS, Effect, PolicyRule

__all__ = ["EFFECTS", "REDACTED_NAME", "Effect", "NodeVerdict", "Policy", "PolicyRule"]

#: What a redacted node shows instead of its name. The redaction shape is decided here, once:
#: a redacted node keeps its id and type and this name; no content, properties or labels, in
#: a context graph, a graph query, a lineage step or a rendering alike.
REDACTED_NAME = "[redacted]"


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

    def shown_name(self, name: str) -> str:
        """The node's name as the caller may see it."""
        return REDACTED_NAME if self.redacted else name
