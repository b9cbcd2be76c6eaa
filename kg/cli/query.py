"""``kg query TEXT``: search the graph from the terminal.

The same application function as the MCP tool ``query_knowledge_graph``, so the same policies:
a denied node is never printed (only counted), a redacted one shows its id and type only. An
agent with a shell gets nothing here that the MCP server would withhold.
"""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from kg.cli.common import allowed, console, err_console, run


def query(
    text: str = typer.Argument(..., help="What to look for."),
    mode: str = typer.Option("hybrid", help="fulltext, semantic or hybrid."),
    node_type: list[str] = typer.Option(None, "--type", help="Only these node types."),
    limit: int = typer.Option(10, help="Number of results (1-100)."),
) -> None:
    """Find nodes by full text, meaning, or both (reciprocal rank fusion); policy-checked."""
    from kg.graph_queries import query_knowledge_graph
    from kg.host.database import open_runtime

    async def go() -> None:
        async with open_runtime() as rt:
            await allowed(rt, "query_knowledge_graph")
            result = await query_knowledge_graph(
                rt, text, mode=mode, node_types=node_type or (), limit=limit
            )
        for warning in result.warnings:
            err_console.print(f"[bold yellow]warning:[/] {escape(warning)}")
        table = Table("score", "node", "type", "name")
        for hit in result.results:
            table.add_row(
                f"{hit.score:.4f}", escape(hit.node_id), escape(hit.node_type), escape(hit.name)
            )
        console.print(table)
        if not result.results:
            console.print("no matches")
        if result.excluded_by_policy:
            console.print(f"{result.excluded_by_policy} result(s) withheld by policy")

    run(go)
