"""``kg projections status|rebuild|catch-up|run``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from kg.cli.common import console, fail, run, stop_on_signals

if TYPE_CHECKING:
    from kg.runtime import Runtime

projections_app = typer.Typer(
    help="The read side: status, catch-up, rebuild.", no_args_is_help=True
)


@projections_app.command("status")
def status() -> None:
    """Each projection's checkpoint in the tenant's log and its lag behind that log."""

    async def go() -> None:
        from kg.host.database import open_runtime

        async with open_runtime() as rt:
            table = Table("projection", "position", "lag")
            for s in await rt.runner.status(rt.scope.tenant_id):
                table.add_row(s.name, str(s.position), str(s.lag))
            console.print(table)

    run(go)


@projections_app.command("catch-up")
def catch_up(
    batch_size: int = typer.Option(2000, min=1, help="Events per transaction."),
) -> None:
    """Apply every new event to the projections, then exit."""

    async def go() -> None:
        from kg.cli.progress import shown
        from kg.host.database import open_runtime

        async with open_runtime() as rt:
            rt.runner.batch_size = batch_size
            with shown("catch-up") as rt.runner.ctx.progress:
                applied = await rt.runner.catch_up()
            console.print(f"applied {applied} events; embedded {rt.runner.ctx.embedded} new texts")

    run(go)


@projections_app.command("rebuild")
def rebuild(
    names: list[str] = typer.Argument(None, help="Projections to rebuild (default: all)."),
    yes: bool = typer.Option(
        False,
        "--yes",
        "-y",
        help="Re-embed without asking when the configured embedder is not the model the "
        "index holds (the cost is printed all the same).",
    ),
) -> None:
    """Empty projections and replay the whole log into them (embeddings come from the cache).

    Rebuilding kg_nodes with an embedder that is not the index's model (KG_EMBEDDER changed)
    re-embeds every text: the count and an estimate of the time are shown first, and the
    command asks (or, not on a terminal, needs --yes)."""

    async def go() -> None:
        from kg.cli.progress import shown
        from kg.host.database import open_runtime

        async with open_runtime() as rt:
            if not names or "kg_nodes" in names:
                await _confirm_reembedding(rt, yes)
            with shown("rebuild") as rt.runner.ctx.progress:
                applied = await rt.runner.rebuild(names or None)
            console.print(
                f"rebuilt {', '.join(names) if names else 'all projections'} from {applied} "
                f"events; embedded {rt.runner.ctx.embedded} new texts"
            )

    run(go)


async def _confirm_reembedding(rt: Runtime, yes: bool) -> None:
    """Show what re-embedding costs and ask; refuse while the embedder does not answer (the
    rebuild would leave every node without its vector)."""
    from kg.errors import EmbeddingError
    from kg.projections.reembed import reembed_cost

    try:
        cost = await reembed_cost(rt.system_pool, rt.embedder)
    except EmbeddingError as error:
        raise EmbeddingError(
            f"not rebuilding kg_nodes: {error} A rebuild now would leave every node without "
            "its vector; rebuild once the embedder answers (full-text search works meanwhile)."
        ) from error
    if not cost.changes_model or not cost.texts:
        return
    console.print(cost.describe(), markup=False)
    if yes:
        return
    if not sys.stdin.isatty():
        fail(
            "re-embedding needs a confirmation and stdin is not a terminal: re-run with --yes "
            "to re-embed, or set KG_EMBEDDER back to the index's model"
        )
    if not typer.confirm("Re-embed the graph with the configured embedder?", default=False):
        fail("not rebuilt: nothing changed", code=1)


@projections_app.command("run")
def run_forever() -> None:
    """Keep the projections current, tailing the log, until interrupted."""

    async def go() -> None:
        stop = stop_on_signals()
        from kg.host.database import open_runtime

        async with open_runtime() as rt:
            console.print("tailing the log; Ctrl-C to stop")
            await rt.runner.run(stop)

    run(go)
