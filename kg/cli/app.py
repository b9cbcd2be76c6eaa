"""The ``kg`` command line (Typer): a thin shell over the application functions.

Built on demand by :mod:`kg.cli.main`, which serves ``kg sync`` without it."""

from __future__ import annotations

import typer

from kg.cli import db, hooks, ingest, inspect_node, new
from kg.cli.audit import as_of_option, audit_app
from kg.cli.backfill import backfill
from kg.cli.context import context_app
from kg.cli.decisions import decision_app, lineage
from kg.cli.demo import demo
from kg.cli.projections import projections_app
from kg.cli.query import query
from kg.cli.server import server_app
from mcp_server.cli import mcp

app = typer.Typer(
    help="Event-sourced knowledge graph: context graphs for coding agents, "
    "an audit trail for reviewers.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    pretty_exceptions_short=True,
)
app.callback()(as_of_option)
app.command("init")(db.init)
app.command("status")(db.status)
app.command("demo")(demo)
app.add_typer(db.db_app, name="db")
app.add_typer(server_app, name="server")
app.add_typer(audit_app, name="audit")
app.command("backfill")(backfill)
app.add_typer(projections_app, name="projections")
app.add_typer(context_app, name="context")
app.command("query")(query)
app.add_typer(decision_app, name="decision")
app.command("lineage")(lineage)
app.command("mcp")(mcp)
app.command("ingest")(ingest.ingest)
app.command("sync")(ingest.sync)
app.command("lint")(ingest.lint)
app.command("inspect")(inspect_node.inspect)
app.command("new")(new.new)
app.add_typer(hooks.hooks_app, name="hooks")
