"""``kg path A B`` and ``kg nodes [--type T]``: the MCP tool ``find_path`` and a listing of
the graph by node type, at the command line. Policy-checked like every read."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.markup import escape

from kg.cli.common import allowed, console, run


def path(
    source: str = typer.Argument(..., help="Start node id."),
    target: str = typer.Argument(..., help="End node id."),
    max_depth: int = typer.Option(4, help="Longest path searched (1 to 6)."),
    as_json: bool = typer.Option(False, "--json", help="Print the path as JSON."),
) -> None:
    """The shortest path between two nodes over edges of any type and direction, never
    through a node a policy denies."""
    from kg.graph_queries import find_path
    from kg.host.database import open_runtime

    async def go() -> dict[str, Any]:
        async with open_runtime() as rt:
            await allowed(rt, "find_path", [source, target])
            found = await find_path(rt, source, target, max_depth=max_depth)
            return found.model_dump(mode="json")

    found = run(go)
    if as_json:
        console.print_json(json.dumps(found, default=str))
        return
    if not found["found"]:
        console.print(f"no path from {source} to {target} within {max_depth} hops", markup=False)
        raise typer.Exit(1)
    nodes, edges = found["nodes"], found["edges"]
    console.print(f"[bold]{escape(nodes[0]['node_id'])}[/] {escape(nodes[0]['name'])}")
    for edge, node in zip(edges, nodes[1:], strict=True):
        arrow = "->" if edge["to_node"] == node["node_id"] else "<-"
        console.print(
            f"  {arrow} [dim]{escape(edge['edge_type'])}[/] [bold]{escape(node['node_id'])}[/] "
            f"{escape(node['name'])}"
        )


def nodes(
    node_type: str = typer.Option(None, "--type", help="List the nodes of this type."),
    limit: int = typer.Option(50, help="Most nodes listed (1 to 1000)."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """The graph's node types with their counts, or the nodes of one type (--type)."""
    from kg.graph_queries import list_nodes
    from kg.host.database import open_runtime

    async def go() -> dict[str, Any]:
        async with open_runtime() as rt:
            await allowed(rt, "query_knowledge_graph")
            return (await list_nodes(rt, node_type, limit)).model_dump(mode="json")

    found = run(go)
    if as_json:
        console.print_json(json.dumps(found, default=str))
        return
    if node_type is None:
        for kind, count in found["types"].items():
            console.print(f"{count:>8}  {kind}", markup=False)
    else:
        total = found["types"].get(node_type, 0)
        console.print(f"{total} {node_type} node(s)", markup=False)
        for view in found["nodes"]:
            console.print(f"  {view['node_id']}  {view['name']}", markup=False)
    if found["excluded_by_policy"]:
        console.print(f"{found['excluded_by_policy']} node(s) hidden by policy", markup=False)
