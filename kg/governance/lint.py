"""``kg lint`` for policy files: what a reviewer should not have to find by reading YAML.

Besides the loader's own problems (invalid YAML, an unknown effect or key, a duplicate id),
checked against the project's parsed specs, without a database:

* a selector that matches nothing: a path glob, a document or section id, or a requirement id
  no spec has is an error (a typo silently protects nothing); node types or labels no spec
  has are a warning (they may select nodes written through the API);
* a deny or redact that hides policies themselves (their files, the ``Policy`` type or
  label, a policy id, or every node of the project): an agent and the graph's reviewers
  could no longer see what governs them;
* two policies in conflict: an ``allow_actions`` policy all of whose spec nodes a ``deny``
  policy hides grants actions on nothing anyone can see.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kg.governance.files import PolicyFiles, PolicySpec, load_policy_files
from kg.parsed.model import ParsedDocument, ParseProblem
from kg.policies.actions import Subject, gating_for
from kg.policies.model import Policy, action_in, path_matches

_FILE_IDS = ("document:", "section:", "requirement:")


@dataclass(frozen=True)
class _Node:
    node_id: str
    node_type: str
    labels: tuple[str, ...]


def _policy(spec: PolicySpec) -> Policy:
    return Policy(spec.policy_id, spec.name, spec.rule, "", origin=spec.origin)


def lint_policy_files(files: PolicyFiles, docs: Iterable[ParsedDocument]) -> list[ParseProblem]:
    """Every problem of the policy files, as ``file:line: message``."""
    problems = list(files.problems)
    nodes = {n.node_id: _Node(n.node_id, n.node_type, n.labels) for d in docs for n in d.nodes}
    selected = {s.policy_id: _selected(s, nodes.values()) for s in files.specs}
    for spec in files.specs:
        problems += _matches_nothing(spec, nodes, selected[spec.policy_id])
        problems += _hides_policies(spec, files)
    problems += _conflicts(files.specs, selected)
    problems += _locked_out(files.specs, nodes.values())
    return problems


def _locked_out(specs: list[PolicySpec], nodes: Iterable[_Node]) -> list[ParseProblem]:
    """Spec files whose gating policies grant ingesting them to nobody: every later
    ``kg sync`` of them would be refused."""
    policies = {s.policy_id: _policy(s) for s in specs}
    locked: dict[str, list[str]] = {}
    for node in nodes:
        if not node.node_id.startswith("document:"):
            continue
        gating = gating_for(Subject(node.node_id, node.node_type, node.labels), policies)
        if gating and not any(
            action_in("ingest_markdown", a) for p in gating for a in p.rule.actions
        ):
            locked.setdefault(min(p.policy_id for p in gating), []).append(node.node_id)
    by_id = {s.policy_id: s for s in specs}
    return [
        ParseProblem(
            by_id[policy_id].origin,
            by_id[policy_id].line,
            f"{policy_id}: no policy lets anyone ingest {len(ids)} spec file(s) it governs "
            f"(e.g. {sorted(ids)[0].removeprefix('document:')}): `kg sync` would be refused for "
            "them; grant ingest_markdown (or write) to 'cli:*' in a policy that selects them",
            "warning",
        )
        for policy_id, ids in sorted(locked.items())
    ]


def lint_policy_texts(root: Path, texts: dict[str, str]) -> list[ParseProblem]:
    """The checks that need no specs (the loader's, and policies hiding policies), on the
    given file texts only: what the pre-commit hook runs on the staged policy files."""
    files = load_policy_files(root, texts, disk=False)
    problems = list(files.problems)
    for spec in files.specs:
        problems += _hides_policies(spec, files)
    return problems


def _selected(spec: PolicySpec, nodes: Iterable[_Node]) -> set[str]:
    policy = _policy(spec)
    return {n.node_id for n in nodes if policy.selects(n.node_type, n.labels, n.node_id)}


def _matches_nothing(
    spec: PolicySpec, nodes: dict[str, _Node], selected: set[str]
) -> list[ParseProblem]:
    rule = spec.rule
    if rule.scope != "selected":
        return []
    found: list[ParseProblem] = []
    for node_id in rule.node_ids:
        if node_id.startswith(_FILE_IDS) and node_id not in nodes:
            found.append(
                ParseProblem(
                    spec.origin,
                    spec.line,
                    f"{spec.policy_id}: node {node_id} is in no spec (check the id: "
                    "`kg inspect PATH` shows a file's nodes)",
                )
            )
    if selected or not (rule.paths or rule.node_types or rule.labels):
        return found
    if rule.paths:
        found.append(
            ParseProblem(
                spec.origin,
                spec.line,
                f"{spec.policy_id}: paths {', '.join(rule.paths)} (with its other selectors) "
                "match no spec file: the policy protects nothing; check the globs",
            )
        )
    elif not any(n.startswith(_FILE_IDS) for n in rule.node_ids):
        found.append(
            ParseProblem(
                spec.origin,
                spec.line,
                f"{spec.policy_id}: no spec node has the selected types/labels (it may still "
                "select nodes written through the API)",
                "warning",
            )
        )
    return found


def _hides_policies(spec: PolicySpec, files: PolicyFiles) -> list[ParseProblem]:
    rule = spec.rule
    if rule.effect == "allow_actions":
        return []
    why = ""
    if rule.scope != "selected":
        if not rule.node_types and not rule.labels and not rule.paths:
            why = f"scope {rule.scope} with no type or label hides every node, policies too"
    elif "Policy" in rule.node_types or "policy" in rule.labels:
        why = "it selects the Policy type or label"
    elif any(n.startswith("policy:") for n in rule.node_ids):
        why = "it names a policy node"
    else:
        own = [f for f in files.files if any(path_matches(p, f) for p in rule.paths)]
        if own:
            why = f"its paths match the policy file {own[0]}"
    if not why:
        return []
    return [
        ParseProblem(
            spec.origin,
            spec.line,
            f"{spec.policy_id}: a {rule.effect} that hides the policies themselves ({why}): "
            "agents and reviewers could no longer see what governs them; narrow the selector",
        )
    ]


def _conflicts(specs: list[PolicySpec], selected: dict[str, set[str]]) -> list[ParseProblem]:
    found: list[ParseProblem] = []
    denies = [s for s in specs if s.rule.effect == "deny"]
    for allow in specs:
        if allow.rule.effect != "allow_actions" or allow.rule.scope != "selected":
            continue
        granted = selected[allow.policy_id]
        if not granted:
            continue
        for deny in denies:
            if deny.rule.scope != "selected" or granted <= selected[deny.policy_id]:
                found.append(
                    ParseProblem(
                        allow.origin,
                        allow.line,
                        f"{allow.policy_id} conflicts with {deny.policy_id} ({deny.source}): "
                        f"it allows actions on {len(granted)} node(s) that {deny.policy_id} "
                        "denies, so it allows nothing; narrow one of them",
                    )
                )
                break
    return found
