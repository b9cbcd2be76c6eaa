"""``kg inspect NODE``: a node's dependency tree in the terminal.

The neighbourhood comes from :func:`kg.graph_queries.get_entity_neighbors`, which applies the
project's policies: a denied node is never shown (only counted), a redacted one shows its id
and type only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.tree import Tree

from kg.cli.common import allowed, console, run

if TYPE_CHECKING:  # the models load with the command's run, not with `kg --help`
    from kg.read.models import Neighbourhood, NodeView

_NODE_ID = re.compile(r"^[a-z][a-z0-9_]{0,39}:")
#: a path as a developer types it: with a slash, or a file name with an extension
_PATHLIKE = re.compile(r"^(?:[^\s:#]*/[^\s:#]*|[^\s:#/]+\.[A-Za-z0-9]{1,10})(?:#.*|:\d{1,7})?$")


def resolve_node(text: str, root: Path, cwd: Path) -> str:
    """What a developer typed, as :mod:`kg.read.names` reads it (which resolves it, in one
    place for every command and tool): a path relative to ``cwd`` becomes relative to the
    project root, keeping its ``#anchor`` or ``:line``; anything else is passed on as it is."""
    from kg.ingest.files import project_relpath

    if _NODE_ID.match(text) or not _PATHLIKE.match(text):
        return text
    cut = min((i for i in (text.find("#"), text.rfind(":")) if i > 0), default=len(text))
    if "/" not in text[:cut] and not (cwd / text[:cut]).exists():
        return text  # ``charge.succeeded``: an event's name, not a file here
    rel = project_relpath(root, cwd / text[:cut])
    return text if rel is None else rel + text[cut:]


def resolve_nodes(texts: Sequence[str] | None, root: Path, cwd: Path) -> list[str]:
    """:func:`resolve_node` of each."""
    return [resolve_node(t, root, cwd) for t in texts or ()]


def _label(view: NodeView, *, content: bool = False) -> str:
    text = f"[bold]{escape(view.node_id)}[/] [cyan]({escape(view.node_type)})[/]"
    if view.redacted:
        return text + " [dim][redacted][/]"
    text += f" {escape(view.name)}"
    if content and view.content.strip():
        first = view.content.strip().splitlines()[0][:120]
        text += f"\n[dim]{escape(first)}[/]"
    return text


def build_tree(result: Neighbourhood, *, content: bool = False) -> Tree:
    """Edges hang under the nearer end (by hop); each node is expanded once, at its first
    place, and later places say "(see above)"."""
    start = result.node.node_id
    views: dict[str, NodeView] = {start: result.node}
    views |= {n.node_id: n for n in result.neighbors}
    hops = {start: 0} | {n.node_id: n.hop for n in result.neighbors}
    children: dict[str, list[tuple[str, str, str]]] = {}
    for edge in result.edges:
        a, b = edge.from_node, edge.to_node
        if a not in hops or b not in hops:
            continue
        parent, child, arrow = (a, b, "→") if hops[a] <= hops[b] else (b, a, "←")
        children.setdefault(parent, []).append((edge.edge_type, child, arrow))
    root = Tree(_label(result.node, content=content))
    shown = {start}

    def grow(branch: Tree, node_id: str) -> None:
        for edge_type, child, arrow in sorted(children.get(node_id, [])):
            prefix = f"{edge_type} →" if arrow == "→" else f"← {edge_type}"
            label = f"[magenta]{prefix}[/] {_label(views[child], content=content)}"
            if child in shown:
                branch.add(label + " [dim](see above)[/]")
                continue
            shown.add(child)
            grow(branch.add(label), child)

    grow(root, start)
    return root


def inspect(
    node: str = typer.Argument(
        ...,
        help="A node id, a Markdown path (docs/prd.md or docs/prd.md#goals), a source "
        "location (src/shop/checkout.py:42), FR-13 or an entity's name (Charge).",
    ),
    depth: int = typer.Option(2, help="Hops to follow (1 to 3)."),
    direction: str = typer.Option("both", help="out (what it depends on), in, or both."),
    edge_type: list[str] = typer.Option(None, "--edge", help="Only follow these edge types."),
    limit: int = typer.Option(100, help="At most this many nodes."),
    content: bool = typer.Option(False, "--content", help="Show each node's first line."),
) -> None:
    """Show a node's dependency tree: its edges out and in, to DEPTH hops."""
    from kg.graph_queries import get_entity_neighbors
    from kg.host.database import open_runtime

    async def go() -> Neighbourhood:
        async with open_runtime() as rt:
            node_id = resolve_node(node, rt.settings.project_root, Path.cwd())
            await allowed(rt, "get_entity_neighbors", [node_id])
            return await get_entity_neighbors(
                rt,
                node_id,
                edge_types=_list(edge_type),
                depth=depth,
                direction=direction,
                limit=limit,
            )

    result = run(go)
    console.print(build_tree(result, content=content))
    notes = []
    if result.excluded_by_policy:
        notes.append(f"{result.excluded_by_policy} nodes excluded by policy")
    if result.truncated:
        notes.append(f"truncated at {limit} nodes (--limit)")
    if notes:
        console.print(f"[dim]{'; '.join(notes)}[/]")


def _list(values: Sequence[str] | None) -> tuple[str, ...]:
    return tuple(values or ())
