"""``kg decision record`` and ``kg lineage DECISION``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kg.cli.common import allowed, console, fail, run

if TYPE_CHECKING:
    from rich.tree import Tree

    from kg.lineage import Lineage

decision_app = typer.Typer(help="Record decisions.", no_args_is_help=True)


@decision_app.command("record")
def record(
    text: str = typer.Argument(..., help="The decision."),
    rationale: str = typer.Option("", help="Why."),
    decision_type: str = typer.Option("general", "--type", help="Kind of decision."),
    confidence: float = typer.Option(None, help="0 to 1."),
    context_graph: list[str] = typer.Option(
        None, "--context-graph", "-g", help="Informing graph id."
    ),
    ref: list[str] = typer.Option(
        None,
        "--ref",
        help="Referenced node (repeatable): an id, a path, path:line, FR1 or an entity name.",
    ),
    supersedes: list[str] = typer.Option(None, help="Superseded decision node id."),
    actor: str = typer.Option("kg cli", help="Who decided."),
) -> None:
    """Record a decision and what informed it (DecisionRecorded)."""
    from kg.cli.inspect_node import resolve_nodes
    from kg.decisions import record_decision
    from kg.events import EventMetadata
    from kg.host.database import open_runtime

    async def go() -> None:
        async with open_runtime() as rt:
            refs = resolve_nodes(ref, rt.settings.project_root, Path.cwd())
            await allowed(rt, "record_decision", [*refs, *(supersedes or ())])
            decision = await record_decision(
                rt,
                text=text,
                rationale=rationale,
                decision_type=decision_type,
                confidence=confidence,
                context_graph_ids=context_graph or (),
                references=refs,
                supersedes=supersedes or (),
                metadata=EventMetadata(actor=actor),
            )
        console.print(
            f"recorded {decision.node_id} at position {decision.position}, informed by "
            f"{len(decision.informed_by)} nodes of {len(decision.context_graph_ids)} context graphs"
        )

    run(go)


def _tree(lineage: Lineage) -> Tree:
    from rich.tree import Tree

    steps = lineage.steps
    children: dict[str, list[tuple[str, str]]] = {}
    for link in lineage.links:
        children.setdefault(link.from_id, []).append((link.relation, link.to_id))
    # A later decision that supersedes one in the tree is linked to it by its own edge
    # (later -> earlier): drawn from the earlier one, or downstream would drop it.
    for link in lineage.links:
        if link.relation == "SUPERSEDES" and link.from_id != lineage.decision_id:
            children.setdefault(link.to_id, []).append(("SUPERSEDED_BY", link.from_id))

    def label(step_id: str, relation: str = "") -> str:
        s = steps[step_id]
        when = f" @{s.position} {s.recorded_at or ''} by {s.actor}" if s.position else ""
        prefix = f"[dim]{relation}[/] " if relation else ""
        return f"{prefix}[bold]{s.id}[/] ({s.kind}) {s.label}{when}"

    root = Tree(label(lineage.decision_id))
    seen = {lineage.decision_id}

    def grow(node: Tree, step_id: str) -> None:
        for relation, target in children.get(step_id, []):
            branch = node.add(label(target, relation))
            if target not in seen:
                seen.add(target)
                grow(branch, target)

    grow(root, lineage.decision_id)
    return root


def lineage(
    decision: str = typer.Argument(..., help="Decision id or 'decision:...' node id."),
    direction: str = typer.Option("upstream", help="upstream, downstream or both."),
    depth: int = typer.Option(3, help="How far to walk."),
    as_json: bool = typer.Option(False, "--json", help="Print the DAG as JSON."),
    fmt: str = typer.Option(
        "tree", "--format", help="tree, json or mermaid (a flowchart for a pull request)."
    ),
) -> None:
    """What a decision was based on (upstream) and what it informed (downstream)."""
    if fmt not in ("tree", "json", "mermaid"):
        fail(f"--format {fmt!r} is unknown: use tree, json or mermaid")
    from kg.host.database import open_runtime
    from kg.lineage import trace_decision_lineage

    async def go() -> None:
        async with open_runtime() as rt:
            target = decision if decision.startswith("decision:") else f"decision:{decision}"
            await allowed(rt, "trace_decision_lineage", [target])
            result = await trace_decision_lineage(rt, decision, direction, depth)
        if fmt == "mermaid":
            from kg.audit.mermaid import lineage_mermaid

            sys.stdout.write(lineage_mermaid(result))
        elif as_json or fmt == "json":
            console.print_json(json.dumps(result.to_dict()))
        else:
            console.print(_tree(result))
            if result.excluded_by_policy:
                console.print(f"{result.excluded_by_policy} node(s) hidden by policy")

    run(go)
