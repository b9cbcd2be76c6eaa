"""``kg policy list|explain|test``: the project's governance, explained to people.

For the developer and the reviewer at a terminal: these name policies, selectors and the ids
of the nodes they govern (never node content). Agents get counts through the MCP tools.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from kg.cli.common import console, run

policy_app = typer.Typer(help="The project's policies: list, explain a node, test a change.")


def _rule_text(rule: dict[str, object]) -> str:
    parts = [f"{k}={','.join(map(str, v))}" for k, v in rule.items() if isinstance(v, list) and v]
    if rule.get("scope") != "selected":
        parts.insert(0, f"scope={rule.get('scope')}")
    return " ".join(parts)


@policy_app.command("list")
def list_policies(
    as_json: bool = typer.Option(False, "--json", help="Print the policies as JSON."),
) -> None:
    """Every policy of the project: effect, selectors, actors and actions, the file that
    declares it and the log position since which it holds."""
    from kg.governance.sync import project_policies
    from kg.host.database import open_runtime

    async def go() -> list[dict[str, object]]:
        async with open_runtime() as rt:
            await rt.catch_up()
            found = await project_policies(rt)
        return [
            {
                "policy_id": p.policy_id,
                "name": p.name,
                "rule": p.rule.model_dump(mode="json"),
                "origin": p.origin,
                "since": p.since,
            }
            for p in found.values()
        ]

    policies = run(go)
    if as_json:
        console.print_json(json.dumps(policies))
        return
    if not policies:
        console.print("no policies (declare them in .kg/policies/*.yaml, then kg sync)")
    for p in policies:
        rule = p["rule"]
        assert isinstance(rule, dict)
        origin = p["origin"] or "API"
        console.print(
            f"{p['policy_id']} [{rule['effect']}] {p['name']}\n"
            f"    {_rule_text(rule)}\n    from {origin}, since position {p['since']}",
            markup=False,
        )


@policy_app.command("explain")
def explain(
    node: str = typer.Argument(..., help="A node id, a Markdown path (docs/a.md#anchor) or FR13."),
    as_json: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
) -> None:
    """Which policies apply to a node, through which GOVERNED_BY edge or selector (path glob,
    label, type, node id, scope), since which log position, and what they decide."""
    from kg.cli.inspect_node import resolve_node
    from kg.governance.explain import Explanation, explain_node
    from kg.host.database import open_runtime

    async def go() -> Explanation:
        async with open_runtime() as rt:
            node_id = resolve_node(node, rt.settings.project_root, Path.cwd())
            return await explain_node(rt, node_id)

    found = run(go)
    if as_json:
        console.print_json(json.dumps(found.to_dict()))
        return
    kind = found.node_type if found.exists else "not in the graph"
    console.print(f"{found.node_id} ({kind}): {found.verdict}", markup=False)
    if not found.applied:
        console.print("  no policy applies", markup=False)
    for a in found.applied:
        origin = a.origin or "API"
        grant = ""
        if a.actions:
            who = ", ".join(a.actors) if a.actors else "anyone (informative: names no actors)"
            grant = f"; allows {', '.join(a.actions)} to {who}"
        console.print(
            f"  {a.policy_id} [{a.effect}] via {a.how}; since position {a.since}, "
            f"from {origin}{grant}",
            markup=False,
        )
    if found.gated_by:
        console.print(
            f"  actions on it need a grant from: {', '.join(found.gated_by)}", markup=False
        )


@policy_app.command("test")
def test(
    files: list[Path] = typer.Argument(
        None,
        help="Draft policy files to test as if they were in the policy folder (default: the "
        "policy folder as it is in the working tree).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the preview as JSON."),
) -> None:
    """What the working tree's policy files would newly deny, redact or allow once synced,
    against the policies the graph holds now. Writes nothing; exit code 1 on a file error."""
    from kg.governance.explain import PolicyPreview, preview_policy_files
    from kg.host.database import open_runtime

    drafts = [Path(f).absolute() for f in files or []]

    async def go() -> PolicyPreview:
        async with open_runtime() as rt:
            return await preview_policy_files(rt, drafts)

    preview = run(go)
    if as_json:
        console.print_json(json.dumps(preview.to_dict()))
    else:
        for p in preview.problems:
            console.print(f"{p.path}:{p.line}: {p.message}", markup=False)
        if not preview.problems and not preview.changes_anything:
            console.print("no change: the policy files match the graph", markup=False)
        for title, ids in (
            ("policies defined", preview.defined),
            ("policies changed", preview.changed),
            ("policies retired", preview.retired),
            ("newly denied", preview.newly_denied),
            ("no longer denied", preview.no_longer_denied),
            ("newly redacted", preview.newly_redacted),
            ("no longer redacted", preview.no_longer_redacted),
            ("grants added", preview.grants_added),
            ("grants removed", preview.grants_removed),
        ):
            if ids:
                console.print(f"{title} ({len(ids)}):", markup=False)
                for item in ids:
                    console.print(f"  {item}", markup=False)
    if any(p.severity == "error" for p in preview.problems):
        raise typer.Exit(1)
