"""The ``kg`` command line (Typer): a thin shell over the application functions.

Built on demand by :mod:`kg.cli.main`, which serves ``kg sync`` without it. Each command's
module is imported only when that command runs: ``kg --help`` and ``kg status`` do not pay for
ingestion, the audit or the MCP SDK. :data:`COMMANDS` names where each command lives and the
one line ``kg --help`` shows for it (a test keeps those lines equal to the commands' own).
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

import typer
import typer._click as click  # Typer (0.29) builds on its own copy of Click: use its classes
from typer.core import TyperCommand, TyperGroup

# kg.read.as_of.AS_OF_ENV, spelled here so that building the CLI does not import the audit.
AS_OF_ENV = "KG_AS_OF_SCHEMA"


@dataclass(frozen=True)
class Lazy:
    """A command (a function, or a Typer group of commands) imported when it is used."""

    module: str
    attribute: str
    help: str

    def load(self, name: str) -> click.Command:
        target = getattr(importlib.import_module(self.module), self.attribute)
        if isinstance(target, typer.Typer):
            command: click.Command = typer.main.get_group(target)
        else:
            single = typer.Typer()
            single.command(name)(target)
            command = typer.main.get_command(single)
        command.name = name
        return command


COMMANDS: dict[str, Lazy] = {
    "init": Lazy(
        "kg.cli.db",
        "init",
        "Create the project's database (embedded unless KG_DATABASE_URL is set) and migrate it.",
    ),
    "status": Lazy(
        "kg.cli.db",
        "status",
        "Which database is in use, its schema revision, the event count and the last position.",
    ),
    "demo": Lazy(
        "kg.cli.demo",
        "demo",
        "Initialise, append the demo knowledge (once: reruns are idempotent), project it, build "
        "a policy-filtered context graph for an agent, reproduce it from the log, verify, status.",
    ),
    "db": Lazy("kg.cli.db", "db_app", "Database schema (Alembic migrations)."),
    "audit": Lazy("kg.cli.audit", "audit_app", "Verify and replay the audit trail."),
    "backfill": Lazy(
        "kg.cli.backfill",
        "backfill",
        "Turn legacy rows into the domain events the live system writes, with provenance "
        "(source: org.db/decisions#42).",
    ),
    "import": Lazy(
        "kg.cli.import_command",
        "import_app",
        "Import knowledge kept by other tools, with provenance.",
    ),
    "projections": Lazy(
        "kg.cli.projections", "projections_app", "The read side: status, catch-up, rebuild."
    ),
    "context": Lazy("kg.cli.context", "context_app", "Build and use context graphs."),
    "query": Lazy(
        "kg.cli.query",
        "query",
        "Find nodes by full text, meaning, or both (reciprocal rank fusion); policy-checked.",
    ),
    "path": Lazy(
        "kg.cli.explore",
        "path",
        "The shortest path between two nodes over edges of any type and direction, never "
        "through a node a policy denies.",
    ),
    "nodes": Lazy(
        "kg.cli.explore",
        "nodes",
        "The graph's node types with their counts, or the nodes of one type (--type).",
    ),
    "decision": Lazy("kg.cli.decisions", "decision_app", "Record decisions."),
    "lineage": Lazy(
        "kg.cli.decisions",
        "lineage",
        "What a decision was based on (upstream) and what it informed (downstream).",
    ),
    "mcp": Lazy(
        "kg.cli.mcp_command",
        "mcp_app",
        "Serve the MCP tools (build_context_graph, record_decision, ...) to an agent.",
    ),
    "ingest": Lazy(
        "kg.cli.ingest",
        "ingest",
        "Parse Markdown specs and source code into the graph, appending events only for what "
        "changed.",
    ),
    "sync": Lazy("kg.cli.ingest", "sync", "Bring the graph up to the current git commit."),
    "watch": Lazy(
        "kg.cli.watch",
        "watch",
        "Keep the graph in step with the working tree: a saved, added or removed spec or source "
        "file is re-ingested within about a second, marked as working-tree state (a later sync "
        "of the commit records the committed one).",
    ),
    "erase": Lazy(
        "kg.cli.erase",
        "erase",
        "Forget content (by node, source file or pattern) with a receipt; the log still verifies.",
    ),
    "lint": Lazy(
        "kg.cli.ingest", "lint", "Check the Markdown specs' integrity; exit code 1 on any error."
    ),
    "inspect": Lazy(
        "kg.cli.inspect_node",
        "inspect",
        "Show a node's dependency tree: its edges out and in, to DEPTH hops.",
    ),
    "new": Lazy(
        "kg.cli.new",
        "new",
        "Create a new spec file from a template (typed by the schema map, lint-clean).",
    ),
    "policy": Lazy(
        "kg.cli.policy",
        "policy_app",
        "The project's policies: list, explain a node, test a change.",
    ),
    "hooks": Lazy("kg.cli.hooks", "hooks_app", "Git hooks: lint staged specs, sync the graph."),
    "rules": Lazy(
        "kg.cli.rules",
        "rules_app",
        "Project rules (AGENTS.md, .cursor/rules, docs/rules) as directives.",
    ),
    "server": Lazy(
        "kg.cli.server",
        "server_app",
        "The project's embedded PostgreSQL: is it running, who holds it, stop it.",
    ),
}


class _Placeholder(TyperCommand):
    """What ``kg --help`` lists for a command not imported yet; running it imports it."""

    def __init__(self, name: str, lazy: Lazy) -> None:
        super().__init__(name, help=lazy.help, short_help=lazy.help)
        self.lazy = lazy

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        real = self.lazy.load(self.name or "")
        return real.make_context(info_name, args, parent=parent, **extra)


class LazyGroup(TyperGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        lazy = COMMANDS.get(cmd_name)
        return None if lazy is None else _Placeholder(cmd_name, lazy)


def load_command(name: str) -> click.Command:
    """The real command ``name`` (for tests and tools that walk the CLI)."""
    return COMMANDS[name].load(name)


app = typer.Typer(
    cls=LazyGroup,
    help="Event-sourced knowledge graph: context graphs for coding agents, "
    "an audit trail for reviewers.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    pretty_exceptions_short=True,
)


@app.callback()
def as_of_option(
    as_of: str = typer.Option(
        None,
        "--as-of",
        metavar="SCHEMA",
        help="Run the command read-only against a kept replay (kg audit replay): the graph as "
        f"it was at that position. Same as {AS_OF_ENV}=SCHEMA.",
    ),
) -> None:
    # The runtime reads the variable when it opens its pools.
    if as_of:
        os.environ[AS_OF_ENV] = as_of
