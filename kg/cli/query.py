"""``kg query TEXT``: search the graph from the terminal."""

from __future__ import annotations

import typer
from rich.table import Table

from kg.cli.common import console, err_console, run


def query(
    text: str = typer.Argument(..., help="What to look for."),
    mode: str = typer.Option("hybrid", help="fulltext, semantic or hybrid."),
    node_type: list[str] = typer.Option(None, "--type", help="Only these node types."),
    limit: int = typer.Option(10, help="Number of results."),
) -> None:
    """Find nodes by full text, meaning, or both (reciprocal rank fusion)."""
    from kg.runtime import open_runtime
    from kg.search import search

    async def go() -> None:
        async with open_runtime() as rt:
            await rt.catch_up()
            result = await search(
                rt.app_pool,
                rt.scope,
                text,
                mode=mode,
                node_types=node_type,
                limit=limit,
                embedder=None if mode == "fulltext" else rt.embedder,
            )
        for warning in result.warnings:
            err_console.print(f"[bold yellow]warning:[/] {warning}")
        table = Table("score", "node", "type", "name")
        for hit in result.hits:
            table.add_row(f"{hit.score:.4f}", hit.node_id, hit.node_type, hit.name)
        console.print(table)
        if not result.hits:
            console.print("no matches")

    run(go)
