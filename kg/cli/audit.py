"""``kg audit``: what a compliance reviewer runs."""

from __future__ import annotations

import typer

from kg.audit.verify import find_position_gaps, verify_tenant
from kg.cli.common import console, err_console, run
from kg.runtime import open_runtime

audit_app = typer.Typer(help="Verify and replay the audit trail.", no_args_is_help=True)


@audit_app.command("verify")
def verify() -> None:
    """Walk this tenant's hash chain and the global positions; exit 1 at the first break."""

    async def go() -> bool:
        async with open_runtime() as rt:
            report = await verify_tenant(rt.app_pool, rt.scope.tenant_id)
            gaps = await find_position_gaps(rt.system_pool)
        (console if report.ok else err_console).print(str(report))
        if gaps:
            err_console.print(
                "BROKEN: the global log is missing position(s) "
                + ", ".join(map(str, gaps))
                + ": events were removed"
            )
        return report.ok and not gaps

    if not run(go):
        raise typer.Exit(1)


@audit_app.command("context")
def context(context_graph_id: str = typer.Argument(..., help="A logged context graph id.")) -> None:
    """Re-derive a logged context graph from the log at its as-of position; exit 1 on mismatch."""
    from kg.context.reproduce import reproduce_context_graph

    async def go() -> bool:
        async with open_runtime() as rt:
            result = await reproduce_context_graph(rt, context_graph_id)
        (console if result.matches else err_console).print(str(result))
        return result.matches

    if not run(go):
        raise typer.Exit(1)
