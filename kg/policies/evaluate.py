"""The one enforcement point: which nodes a context graph may contain, and in what form.

Works on plain values (node type, labels, the policies attached by GOVERNED_BY edges); the SQL
that fetches them lives with the projections.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kg.policies.model import NodeVerdict, Policy, node_path


def selected_types(policies: Iterable[Policy]) -> list[str]:
    """The node types the policies select by: the documents of these types are the ones whose
    sections a :class:`Governance` must know the type of (``file_types``)."""
    return sorted({t for p in policies for t in p.rule.node_types})


@dataclass
class Governance:
    """Running tally of what the policies did during one build. Never holds denied content:
    only policy ids and counts."""

    policies: dict[str, Policy]
    excluded: Counter[str] = field(default_factory=Counter)
    redacted: Counter[str] = field(default_factory=Counter)
    applied: set[str] = field(default_factory=set)
    excluded_nodes: int = 0
    #: the type of each document whose type a policy selects, by file path (``docs/s.md`` ->
    #: ``Story``): what lets a type selector cover the document's sections
    #: (:func:`selected_types` says which types to load)
    file_types: dict[str, str] = field(default_factory=dict)

    @property
    def admits_everything(self) -> bool:
        """No policy applies here: every node is admitted as it is, and nothing is counted."""
        return not self.policies

    def verdict(
        self,
        node_type: str,
        labels: Iterable[str],
        governed_by: Sequence[str],
        node_id: str,
    ) -> NodeVerdict:
        """Decide one node. Deny wins over redact; allow_actions only adds permissions.

        ``node_id`` is required: path-glob and node-id selectors need it, and a caller that
        left it out let a policy selecting files by path pass the nodes it denies (browse
        listings, served directives, URI completion)."""
        verdict = NodeVerdict()
        for policy, _ in self.applicable(node_type, labels, governed_by, node_id):
            effect = policy.rule.effect
            if effect == "deny":
                verdict.denied_by.append(policy.policy_id)
            elif effect == "redact":
                verdict.redacted_by.append(policy.policy_id)
            else:
                verdict.actions[policy.policy_id] = policy.rule.actions
        return verdict

    def applicable(
        self,
        node_type: str,
        labels: Iterable[str],
        governed_by: Sequence[str],
        node_id: str,
    ) -> list[tuple[Policy, str]]:
        """The policies that apply to one node and how each reaches it: ``GOVERNED_BY edge``
        or the selector in words (``path docs/legal/**``, ``label secret``, ``scope project``).
        What ``kg policy explain`` shows a person; an agent only ever gets counts."""
        if self.admits_everything:  # most projects have no policy: decided at once
            return []
        labels = tuple(labels)
        path = node_path(node_id) or ""
        found = [(self.policies[p], "GOVERNED_BY edge") for p in governed_by if p in self.policies]
        for p in self.policies.values():
            if p.policy_id in governed_by:
                continue
            how = p.selected_by(node_type, labels, node_id, path, self.file_types.get(path))
            if how is not None:
                found.append((p, how))
        return found

    def admit(
        self,
        node_type: str,
        labels: Iterable[str],
        governed_by: Sequence[str],
        node_id: str,
    ) -> NodeVerdict:
        """Decide one node and count the decision (call once per distinct node)."""
        verdict = self.verdict(node_type, labels, governed_by, node_id)
        if verdict.denied:
            self.excluded_nodes += 1
            for policy_id in verdict.denied_by:
                self.excluded[policy_id] += 1
                self.applied.add(policy_id)
            return verdict
        for policy_id in verdict.redacted_by:
            self.redacted[policy_id] += 1
            self.applied.add(policy_id)
        self.applied.update(verdict.actions)
        return verdict
