"""``kg projections status|rebuild|catch-up|run``."""

from __future__ import annotations

import typer
from rich.table import Table

from kg.cli.common import console, run, stop_on_signals

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
) -> None:
    """Empty projections and replay the whole log into them (embeddings come from the cache)."""

    async def go() -> None:
        from kg.cli.progress import shown
        from kg.host.database import open_runtime

        async with open_runtime() as rt:
            with shown("rebuild") as rt.runner.ctx.progress:
                applied = await rt.runner.rebuild(names or None)
            console.print(
                f"rebuilt {', '.join(names) if names else 'all projections'} from {applied} "
                f"events; embedded {rt.runner.ctx.embedded} new texts"
            )

    run(go)


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
