"""The ``kg`` entry point.

``kg sync`` runs after every commit (by hand or from the post-commit hook), so it starts
without building the Typer application (Typer, Click and every command's module cost ~0.15 s);
any other command line, ``kg sync --help`` included, goes to :mod:`kg.cli.app`.
"""

from __future__ import annotations

import sys
from typing import Any

_FAST = {("sync",): False, ("sync", "--full"): True}


class _Entry:
    """Callable like the Typer app it stands for (``app()``, ``app(prog_name="kg")``)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        argv = kwargs.get("args")
        full = _FAST.get(tuple(sys.argv[1:] if argv is None else argv))
        if full is not None and not args:
            from kg.cli.sync_command import main

            sys.exit(main(full))
        from kg.cli.app import app as typer_app

        return typer_app(*args, **kwargs)


app = _Entry()
