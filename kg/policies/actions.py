"""Actions: what a tool call or a command does, and whether a policy lets an actor do it.

Every MCP tool is an action of the same name, and each CLI command that reads or writes the
graph runs as the tool it mirrors (``kg ingest`` and ``kg sync`` as ``ingest_markdown``,
``kg decision record`` as ``record_decision``, ``kg import memory`` as ``create_entities``,
...). A policy's ``actions`` may name an action,
``read`` (every reading action), ``write`` (every appending one) or ``*``.

Who may act is decided by the *gating* policies: ``allow_actions`` policies that name actors.
A node governed by gating policies may be acted on only by an actor one of them grants the
action to. The most specific policies decide: those that reach the node through a GOVERNED_BY
edge or a selector, and only where there are none the project- and tenant-scoped ones (so a
policy on ``docs/legal/**`` can narrow what the project default allows). An action that names
no node is governed by the project- and tenant-scoped gating policies. Where no gating policy
governs, the action is allowed: a project without gating policies behaves as before.
``default: deny-writes`` in a policy file is such a project-scoped policy
(``policy:default``), granting ``read`` to everyone, so every write needs an explicit grant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kg.policies.model import Policy


@dataclass(frozen=True)
class Subject:
    """A node an action involves, as the policies see it (a missing node: no type, no edges)."""

    node_id: str
    node_type: str = ""
    labels: tuple[str, ...] = ()
    governed_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Refusal:
    """Why an action was refused: the gating policies that govern what it touched and grant
    it to nobody matching the actor. ``nodes``: how many of the nodes involved were refused
    (0: the action as a whole, for an action naming no node)."""

    actor: str
    action: str
    policy_ids: tuple[str, ...]
    nodes: int
    refused_ids: tuple[str, ...]

    def message(self) -> str:
        what = (
            f"on {self.nodes} of the nodes involved"
            if self.nodes
            else "in this project (the call names no node)"
        )
        which = "policy" if len(self.policy_ids) == 1 else "policies"
        verb = "allows" if len(self.policy_ids) == 1 else "allow"
        return (
            f"{self.actor} may not run {self.action} {what}: {which} "
            f"{', '.join(self.policy_ids)} {verb} it only to other actors. The refusal is "
            "logged. To allow it, add the actor (or a pattern such as 'mcp:*') and the action "
            "to an allow_actions policy in .kg/policies/ and sync; `kg policy explain NODE` "
            "shows which policies govern a node"
        )


def gating_for(subject: Subject, policies: Mapping[str, Policy]) -> list[Policy]:
    """The gating policies that decide for one node: those reaching it by edge or selector,
    else the project- and tenant-scoped ones."""
    found = [policies[p] for p in subject.governed_by if p in policies and policies[p].gates]
    scoped: list[Policy] = []
    for p in policies.values():
        if not p.gates or p.policy_id in subject.governed_by:
            continue
        if p.rule.scope != "selected":
            scoped.append(p)
        elif p.selects(subject.node_type, subject.labels, subject.node_id):
            found.append(p)
    return found or scoped


def authorize(
    policies: Mapping[str, Policy], actor: str, action: str, subjects: Sequence[Subject]
) -> Refusal | None:
    """None when ``actor`` may run ``action`` on ``subjects``; else what refused it."""
    if not any(p.gates for p in policies.values()):
        return None
    refusing: set[str] = set()
    refused: list[str] = []
    units: list[tuple[str, list[Policy]]]
    if subjects:
        units = [(s.node_id, gating_for(s, policies)) for s in subjects]
    else:
        scoped = [p for p in policies.values() if p.gates and p.rule.scope != "selected"]
        units = [("", scoped)]
    for node_id, gating in units:
        if gating and not any(p.grants(actor, action) for p in gating):
            refusing.update(p.policy_id for p in gating)
            if node_id:
                refused.append(node_id)
    if not refusing:
        return None
    return Refusal(actor, action, tuple(sorted(refusing)), len(refused), tuple(refused))
