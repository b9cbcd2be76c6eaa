"""``kg new epic|story|adr|rule NAME``: start a spec from a template that passes lint."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from kg.cli.common import console, err_console


class DocKind(StrEnum):
    epic = "epic"
    story = "story"
    adr = "adr"
    rule = "rule"


def new(
    kind: DocKind = typer.Argument(..., help="What to create."),
    name: str = typer.Argument(..., help="Its title, e.g. 'Checkout with a saved card'."),
    folder: Path = typer.Option(
        None, "--dir", help="Folder to create it in (default: docs/epics, docs/stories, ...)."
    ),
    epic: Path = typer.Option(None, "--epic", help="For a story: the epic file it belongs to."),
) -> None:
    """Create a new spec file from a template (typed by the schema map, lint-clean)."""
    from kg.config import Settings
    from kg.errors import KgError
    from kg.ingest.service import lint_files
    from kg.ingest.templates import new_document

    root = Settings.from_env().project_root
    cwd = Path.cwd()
    try:
        path = new_document(
            root,
            kind.value,
            name,
            folder=None if folder is None else cwd / folder,
            epic=None if epic is None else cwd / epic,
        )
        problems = lint_files(root, [path])
    except KgError as error:
        err_console.print(f"[bold red]error:[/] {error}")
        raise typer.Exit(1) from None
    console.print(f"created {path.relative_to(root)}", markup=False)
    for p in problems:
        err_console.print(str(p), markup=False)
    if any(p.severity == "error" for p in problems):
        raise typer.Exit(1)
