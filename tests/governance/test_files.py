"""Policy files: parsed with the line each policy is declared at, every mistake a
``file:line`` problem, and linted against the project's specs (no database)."""

from __future__ import annotations

from pathlib import Path

from kg.governance.files import DEFAULT_POLICY_ID, load_policy_files
from kg.ingest.service import lint_files


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


LEGAL = """\
# Governance of the legal folder
policies:
  - id: legal-hidden
    name: No agent reads legal
    effect: deny
    paths: ["docs/legal/**"]

  - id: agents-decide
    name: Agents may record decisions
    effect: allow_actions
    scope: project
    actions: [read, record_decision]
    actors: ["mcp:*"]
  - id: fr13
    effect: redact
    requirements: [fr13]
    nodes: [component:vault]
"""


def test_each_policy_is_read_with_its_file_and_line(tmp_path: Path) -> None:
    write(tmp_path, ".kg/policies/legal.yaml", LEGAL)

    found = load_policy_files(tmp_path)

    assert found.problems == []
    hidden, decide, fr13 = found.specs
    assert (hidden.policy_id, hidden.source) == ("policy:legal-hidden", ".kg/policies/legal.yaml:3")
    assert hidden.rule.effect == "deny" and hidden.rule.paths == ("docs/legal/**",)
    assert decide.source == ".kg/policies/legal.yaml:8"
    assert decide.rule.actors == ("mcp:*",) and decide.rule.scope == "project"
    # Requirement ids are canonical node ids, whatever their spelling.
    assert fr13.rule.node_ids == ("component:vault", "requirement:FR-13")
    assert fr13.name == "fr13"


def test_default_deny_writes_is_a_project_policy_granting_reads(tmp_path: Path) -> None:
    write(tmp_path, ".kg/policies/default.yml", "default: deny-writes\n")

    (spec,) = load_policy_files(tmp_path).specs

    assert spec.policy_id == DEFAULT_POLICY_ID
    assert spec.rule.scope == "project" and spec.rule.actions == ("read",)
    assert spec.rule.actors == ("*",)


def test_mistakes_are_file_line_problems(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".kg/policies/bad.yaml",
        "policies:\n"
        "  - id: a\n    effect: forbid\n    labels: [x]\n"
        "  - id: b\n    effect: deny\n    actions: [read]\n    labels: [x]\n"
        "  - id: c\n    effect: deny\n"
        "  - id: d\n    effect: deny\n    colour: red\n",
    )
    write(tmp_path, ".kg/policies/dup.yaml", "policies:\n  - {id: a2, effect: deny, labels: [y]}\n")
    write(
        tmp_path, ".kg/policies/more.yaml", "policies:\n  - {id: a2, effect: redact, labels: [z]}\n"
    )
    write(tmp_path, ".kg/policies/broken.yaml", "policies: [\n")

    found = load_policy_files(tmp_path)

    said = {f"{p.path}:{p.line}: {p.message}" for p in found.problems}
    assert (
        ".kg/policies/bad.yaml:2: policy:a: unknown effect 'forbid'; use one of deny, "
        "redact, allow_actions" in said
    )
    assert any(
        s.startswith(".kg/policies/bad.yaml:5: policy:b:") and "cannot list actions" in s
        for s in said
    ), said
    assert any(s.startswith(".kg/policies/bad.yaml:9: policy:c: no selector") for s in said)
    assert any(
        s.startswith(".kg/policies/bad.yaml:11: policies[3]: unknown key(s) ['colour']")
        for s in said
    ), said
    assert any(
        s.startswith(
            ".kg/policies/more.yaml:2: policy id policy:a2 is already declared "
            "at .kg/policies/dup.yaml:2"
        )
        for s in said
    ), said
    assert any(s.startswith(".kg/policies/broken.yaml:2: invalid YAML") for s in said), said
    assert not found.ok


def test_lint_reports_policies_that_select_nothing_hide_policies_or_conflict(
    tmp_path: Path,
) -> None:
    write(tmp_path, "docs/legal/nda.md", "# NDA\n\nSigned.\n")
    write(tmp_path, "docs/prd.md", "---\nlabels: [public]\n---\n# PRD\n\nFR-1 login.\n")
    write(
        tmp_path,
        ".kg/policies/p.yaml",
        "policies:\n"
        "  - {id: typo, effect: deny, paths: ['docs/legl/**']}\n"
        "  - {id: hide-all, effect: redact, paths: ['.kg/**']}\n"
        "  - {id: legal, effect: deny, paths: ['docs/legal/**']}\n"
        "  - {id: legal-team, effect: allow_actions, actions: [read], actors: ['cli:*'],"
        " paths: ['docs/legal/*.md']}\n"
        "  - {id: ghost, effect: deny, nodes: ['section:docs/prd.md#nope']}\n"
        "  - {id: comp, effect: deny, node_types: [Component]}\n",
    )

    said = {f"{p.path}:{p.line}: {p.message}": p.severity for p in lint_files(tmp_path)}

    def one(start: str) -> str:
        hits = [s for s in said if s.startswith(start)]
        assert len(hits) == 1, (start, said)
        return said[hits[0]]

    assert one(".kg/policies/p.yaml:2: policy:typo: paths docs/legl/** ") == "error"
    assert (
        one(
            ".kg/policies/p.yaml:3: policy:hide-all: a redact that hides the policies "
            "themselves (its paths match the policy file .kg/policies/p.yaml)"
        )
        == "error"
    )
    assert (
        one(
            ".kg/policies/p.yaml:5: policy:legal-team conflicts with policy:legal "
            "(.kg/policies/p.yaml:4)"
        )
        == "error"
    )
    assert (
        one(".kg/policies/p.yaml:6: policy:ghost: node section:docs/prd.md#nope is in no spec")
        == "error"
    )
    assert one(".kg/policies/p.yaml:7: policy:comp: no spec node has the selected") == "warning"
    assert not any(s.startswith(".kg/policies/p.yaml:4:") for s in said), said
    # Linting one spec file leaves the policy files out; naming the folder brings them in.
    assert not any(p.path.startswith(".kg/") for p in lint_files(tmp_path, ["docs/prd.md"]))
    assert {p.path for p in lint_files(tmp_path, [".kg/policies"])} == {".kg/policies/p.yaml"}


def test_lint_warns_when_no_policy_lets_anyone_ingest_the_files_it_gates(tmp_path: Path) -> None:
    write(tmp_path, "docs/stories/a.md", "# A\n")
    write(
        tmp_path,
        ".kg/policies/p.yaml",
        "policies:\n  - {id: stories, effect: allow_actions, paths: ['docs/stories/**'],"
        " actions: [read, record_decision], actors: ['mcp:*']}\n",
    )

    (problem,) = lint_files(tmp_path)

    assert problem.severity == "warning" and problem.line == 2
    assert problem.message.startswith(
        "policy:stories: no policy lets anyone ingest 1 spec file(s) it governs "
        "(e.g. docs/stories/a.md): `kg sync` would be refused"
    )
