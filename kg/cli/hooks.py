"""``kg hooks install``: the git hooks that lint before a commit and sync after it."""

from __future__ import annotations

import typer

from kg.cli.common import console, err_console

hooks_app = typer.Typer(help="Git hooks: lint staged specs, sync the graph.", no_args_is_help=True)


@hooks_app.command("install")
def install(
    background_above: int = typer.Option(
        20,
        "--background-above",
        help="Above this many changed Markdown files, post-commit syncs in the background.",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace hooks kg did not write (kept as <hook>.before-kg)."
    ),
) -> None:
    """Install the pre-commit and post-commit hooks.

    pre-commit blocks a commit whose staged Markdown has integrity errors; post-commit syncs
    the graph and never fails the commit (errors go to .kg/hooks.log).
    """
    from kg.config import Settings
    from kg.errors import KgError
    from kg.ingest.hooks import install_hooks

    root = Settings.from_env().project_root
    try:
        installed = install_hooks(root, background_above=background_above, force=force)
    except KgError as error:
        err_console.print(f"[bold red]error:[/] {error}")
        raise typer.Exit(1) from None
    for hook in installed:
        console.print(f"installed {hook.path}", markup=False)
        if hook.replaced is not None:
            console.print(f"  (the previous hook is kept as {hook.replaced})", markup=False)
    console.print(f"post-commit syncs in the background above {background_above} changed files")
