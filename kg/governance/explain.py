"""Explanations for people: which policies apply to a node and why, and what a change to the
policy files would do before it is committed.

These are for the developer and the compliance reviewer at the command line (``kg policy
explain|test``): they name the nodes a policy hides. An agent never gets them; through the
MCP tools it only ever sees counts (invariant 9).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kg.governance.files import PolicyFiles, load_policy_files, policy_folder
from kg.governance.parts import PolicyParts
from kg.governance.sync import plan
from kg.parsed.model import ParseProblem
from kg.policies.actions import Subject, gating_for
from kg.policies.evaluate import Governance
from kg.policies.model import Policy, document_paths
from kg.read.names import spelled_ids


@dataclass(frozen=True)
class Applied:
    """One policy applying to the node: through which edge or selector, since which log
    position, declared where."""

    policy_id: str
    name: str
    effect: str
    how: str
    since: int
    origin: str
    actions: tuple[str, ...] = ()
    actors: tuple[str, ...] = ()


@dataclass
class Explanation:
    node_id: str
    exists: bool
    node_type: str = ""
    applied: list[Applied] = field(default_factory=list)
    verdict: str = "shown"  # shown | redacted | denied
    #: action -> whether an actor is gated on this node, and the policies granting it
    gated_by: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "node_id": self.node_id,
            "exists": self.exists,
            "node_type": self.node_type,
            "verdict": self.verdict,
            "policies": [a.__dict__ for a in self.applied],
            "gated_by": self.gated_by,
        }


async def _policies_and_rows(
    rt: PolicyParts, node_ids: list[str]
) -> tuple[Governance, dict[str, Subject]]:
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        subjects = await governed.subjects(node_ids)
    return governed.governance, {s.node_id: s for s in subjects}


async def _node_named(rt: PolicyParts, name: str) -> str:
    """The node ``name`` names (:mod:`kg.read.names`); one that does not exist (yet) by the
    id its spelling gives (``docs/a.md`` -> ``document:docs/a.md``), so that path selectors
    still say what would apply to it."""
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        node_id = (await governed.resolve([name]))[0]
        if node_id == name and not await governed.subjects([name]):
            return next(iter(spelled_ids(name)), name)
    return node_id


async def explain_node(rt: PolicyParts, node_id: str) -> Explanation:
    """Which policies apply to ``node_id`` (any name :mod:`kg.read.names` reads; it need not
    exist: path and id selectors still say what would apply to it), through which edge or
    selector, since which position."""
    node_id = await _node_named(rt, node_id)
    gov, rows = await _policies_and_rows(rt, [node_id])
    policies = gov.policies
    subject = rows.get(node_id, Subject(node_id))
    found = Explanation(node_id, node_id in rows, subject.node_type)
    for policy, how in gov.applicable(
        subject.node_type, subject.labels, subject.governed_by, node_id
    ):
        rule = policy.rule
        found.applied.append(
            Applied(
                policy.policy_id,
                policy.name,
                rule.effect,
                how,
                policy.since,
                policy.origin,
                rule.actions,
                rule.actors,
            )
        )
    verdict = gov.verdict(subject.node_type, subject.labels, subject.governed_by, node_id)
    found.verdict = "denied" if verdict.denied else "redacted" if verdict.redacted else "shown"
    found.gated_by = sorted(p.policy_id for p in gating_for(subject, policies))
    return found


@dataclass
class PolicyPreview:
    """What the working tree's policy files would change, against the graph's policies."""

    defined: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    newly_denied: list[str] = field(default_factory=list)
    no_longer_denied: list[str] = field(default_factory=list)
    newly_redacted: list[str] = field(default_factory=list)
    no_longer_redacted: list[str] = field(default_factory=list)
    #: (actor pattern, action) pairs granted or withdrawn, per policy
    grants_added: list[str] = field(default_factory=list)
    grants_removed: list[str] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)

    @property
    def changes_anything(self) -> bool:
        return bool(self.defined or self.changed or self.retired)

    def to_dict(self) -> dict[str, object]:
        data = dict(self.__dict__)
        data["problems"] = [str(p) for p in self.problems]
        return data


def _proposed(current: Mapping[str, Policy], files: PolicyFiles, project: str) -> dict[str, Policy]:
    """The policies the graph would hold once ``files`` are synced into ``project``."""
    specs = files.by_id()
    proposed = {
        k: p for k, p in current.items() if k in specs or not p.origin or p.project_id != project
    }
    for spec in specs.values():
        proposed[spec.policy_id] = Policy(
            spec.policy_id, spec.name, spec.rule, project, 0, spec.origin, spec.description
        )
    return proposed


def _grants(policies: Mapping[str, Policy]) -> set[str]:
    return {
        f"{p.policy_id}: {actor} may {action}"
        for p in policies.values()
        if p.gates
        for actor in p.rule.actors
        for action in p.rule.actions
    }


async def preview_policy_files(rt: PolicyParts, extra: list[Path] | None = None) -> PolicyPreview:
    """What syncing the working tree's policy files (plus ``extra`` files, read as if they
    were in the policy folder) would newly deny, redact or allow. Writes nothing."""
    root = rt.settings.project_root
    overrides = {}
    for path in extra or []:
        rel = f"{policy_folder(root)}/{path.name}"
        overrides[rel] = await asyncio.to_thread(path.read_text, encoding="utf-8")
    files = await asyncio.to_thread(load_policy_files, root, overrides)
    result = PolicyPreview(problems=list(files.problems))
    if not files.ok:
        return result
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        current = dict(governed.governance.policies)
        subjects = await governed.every_subject()
    mine = {k: p for k, p in current.items() if p.project_id == rt.scope.project_id}
    for event in plan(files.specs, mine):
        policy_id = event.policy_id  # type: ignore[attr-defined]
        {"PolicyDefined": result.defined, "PolicyChanged": result.changed}.get(
            event.event_type, result.retired
        ).append(policy_id)
    if not result.changes_anything:
        return result
    # Every document's type, for the type selectors of both the current and proposed policies.
    types = document_paths((s.node_id, s.node_type) for s in subjects)
    before = Governance(current, file_types=types)
    after = Governance(_proposed(current, files, rt.scope.project_id), file_types=types)
    for s in subjects:
        node_id = s.node_id
        old = before.verdict(s.node_type, s.labels, s.governed_by, node_id)
        new = after.verdict(s.node_type, s.labels, s.governed_by, node_id)
        if new.denied != old.denied:
            (result.newly_denied if new.denied else result.no_longer_denied).append(node_id)
        elif new.redacted != old.redacted:
            (result.newly_redacted if new.redacted else result.no_longer_redacted).append(node_id)
    old_grants, new_grants = _grants(before.policies), _grants(after.policies)
    result.grants_added = sorted(new_grants - old_grants)
    result.grants_removed = sorted(old_grants - new_grants)
    return result
