"""``kg import memory FILE.jsonl``: import a reference MCP memory server's file."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kg.cli.common import console, run

import_app = typer.Typer(
    no_args_is_help=True, help="Import knowledge kept by other tools, with provenance."
)


@import_app.command("memory")
def memory(
    path: Path = typer.Argument(
        ..., help="The memory server's memory.jsonl (MEMORY_FILE_PATH)", exists=True, dir_okay=False
    ),
    show: int = typer.Option(50, min=0, help="Skipped lines listed on screen."),
) -> None:
    """Import the entities, observations and relations of a memory.jsonl, each event naming
    its line (source: memory.jsonl:12). Idempotent: a rerun appends only what is new."""
    from kg.governance.enforce import cli_actor, require
    from kg.host.database import open_runtime
    from kg.memory.importer import import_memory

    def progress(done: int, total: int) -> None:
        sys.stderr.write(f"imported {done} of {total} lines\n")
        sys.stderr.flush()

    async def go() -> None:
        async with open_runtime() as rt:
            actor = cli_actor()
            await require(rt, actor, "create_entities")  # the tool it mirrors
            report = await import_memory(rt, path, actor=actor, progress=progress)
            await rt.catch_up()
        console.print(report.summary())
        for skipped in report.skipped[:show]:
            console.print(f"skipped {skipped}", markup=False, highlight=False)
        if len(report.skipped) > show:
            console.print(f"... and {len(report.skipped) - show} more skipped lines")

    run(go)
