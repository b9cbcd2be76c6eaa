"""The ``kg`` entry point.

A command line first goes to the project's resident command host when one is warm
(:mod:`kg.host.resident`: the interpreter and kg's imports are then paid once, not per
command); otherwise, or when the host cannot take it, it runs here. ``kg sync`` runs after
every commit (by hand or from the post-commit hook), so it starts without building the Typer
application (Typer, Click and every command's module cost ~0.15 s); any other command line,
``kg sync --help`` included, goes to :mod:`kg.cli.app`.
"""

from __future__ import annotations

import sys
from typing import Any

_FAST = {("sync",): False, ("sync", "--full"): True}
_WORKTREE = ("sync", "--worktree")


def run_here(argv: list[str], *args: Any, **kwargs: Any) -> Any:
    """Run ``kg argv`` in this process."""
    full = _FAST.get(tuple(argv))
    if (full is not None or tuple(argv) == _WORKTREE) and not args:
        from kg.cli.sync_command import main

        sys.exit(main(bool(full), worktree=full is None))
    from kg.cli.app import app as typer_app

    # "kg" even where Click would name the program after ``__main__`` (the resident host)
    return typer_app(*args, **{"args": argv, "prog_name": "kg", **kwargs})


class _Entry:
    """Callable like the Typer app it stands for (``app()``, ``app(prog_name="kg")``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.pop("args", None)
        if argv is None and not args:  # the console script: try the warm host first
            from kg.host.resident import run_in_host

            status = run_in_host(sys.argv[1:])
            if status is not None:
                sys.exit(status)
        return run_here(list(sys.argv[1:] if argv is None else argv), *args, **kwargs)


app = _Entry()
