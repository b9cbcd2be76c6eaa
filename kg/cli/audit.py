"""``kg audit``: what a compliance reviewer runs."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from kg.audit.as_of import AS_OF_ENV, list_replays
from kg.cli.common import console, err_console, fail, run
from kg.runtime import Runtime, open_runtime

audit_app = typer.Typer(help="Verify and replay the audit trail.", no_args_is_help=True)


def _note_as_of(rt: Runtime) -> None:
    if rt.as_of is not None:
        err_console.print(f"reading the replay {rt.as_of.describe()}", markup=False)


def _live_only(rt: Runtime, what: str) -> None:
    if rt.as_of is not None:
        raise rt.as_of.read_only(what)


@audit_app.command("verify")
def verify(
    projections: bool = typer.Option(
        False,
        "--projections",
        help="Also compare a digest of every projection with a fresh replay of the log into a "
        "scratch schema at the same position.",
    ),
) -> None:
    """Walk this tenant's hash chain and the global positions; exit 1 at the first break."""

    async def go() -> bool:
        async with open_runtime() as rt:
            _note_as_of(rt)
            if projections:
                _live_only(rt, "compare projections (that checks the live ones)")
            from kg.audit.verify import find_position_gaps, verify_tenant

            report = await verify_tenant(rt.app_pool, rt.scope.tenant_id)
            gaps = await find_position_gaps(rt.system_pool)
            (console if report.ok else err_console).print(str(report))
            if gaps:
                err_console.print(
                    "BROKEN: the global log is missing position(s) "
                    + ", ".join(map(str, gaps))
                    + ": events were removed"
                )
            ok = report.ok and not gaps
            if projections:
                from kg.audit.projections_check import verify_projections

                await rt.catch_up()
                checks = await verify_projections(
                    rt.system_pool, rt.url, rt.embedder, rt.scope.tenant_id
                )
                for check in checks:
                    (console if check.ok else err_console).print(str(check), markup=False)
                    ok = ok and check.ok
        return ok

    if not run(go):
        raise typer.Exit(1)


@audit_app.command("replay")
def replay(
    until: str = typer.Option(
        None, "--until", help="A log POSITION, or an ISO-8601 TIME (no zone: UTC)."
    ),
    schema: str = typer.Option(
        None, "--schema", help="Schema to keep the replay in (default: kg_asof_<position>)."
    ),
    list_them: bool = typer.Option(False, "--list", help="List the kept replays."),
    drop: str = typer.Option(None, "--drop", metavar="SCHEMA", help="Drop a kept replay."),
) -> None:
    """Rebuild the graph as it was at a position or time into a separate schema and keep it;
    then run any read command against it with `kg --as-of SCHEMA ...`."""
    if sum((until is not None, list_them, drop is not None)) != 1:
        fail("pass exactly one of --until POSITION|TIME, --list or --drop SCHEMA")

    async def go() -> None:
        from kg.audit.snapshot import drop_kept, materialise

        async with open_runtime() as rt:
            if list_them:
                replays = await list_replays(rt.system_pool)
                for kept in replays:
                    console.print(kept.describe(), markup=False)
                if not replays:
                    console.print("no kept replays")
                return
            _live_only(rt, "replay or drop schemas")
            if drop:
                await drop_kept(rt.system_pool, drop)
                console.print(f"dropped {drop}")
                return
            as_of, applied = await materialise(rt.system_pool, rt.url, until, rt.embedder, schema)
        console.print(
            f"replayed {applied} events into {as_of.describe()}\n"
            f"read it with: kg --as-of {as_of.schema} <command>  (or {AS_OF_ENV}="
            f"{as_of.schema}); read-only\ndrop it with: kg audit replay --drop {as_of.schema}",
            markup=False,
        )

    run(go)


@audit_app.command("trail")
def trail(
    decision: str = typer.Option(None, "--decision", help="A decision id (decision:ID or ID)."),
    session: str = typer.Option(None, "--session", help="A session id."),
    actor: str = typer.Option(None, "--actor", help="An actor name (metadata.actor)."),
    since: str = typer.Option(None, "--since", help="ISO-8601 time (no zone: UTC), inclusive."),
    until: str = typer.Option(None, "--until", help="ISO-8601 time (no zone: UTC), inclusive."),
    fmt: str = typer.Option("jsonl", "--format", help="jsonl, csv or md."),
    output: Path = typer.Option(None, "--output", "-o", help="Write to FILE, not stdout."),
) -> None:
    """The events of a decision, session, actor or time window, in log order: who, what, when,
    why and the source. Filters combine (AND); with none, the whole trail of the scope."""
    from kg.audit.snapshot import parse_time
    from kg.audit.trail import TrailFilter
    from kg.audit.trail import trail as select
    from kg.audit.trail_format import FORMATS, write_trail

    if fmt not in FORMATS:
        fail(f"--format {fmt!r} is unknown: use {', '.join(FORMATS)}")

    async def go() -> int:
        selection = TrailFilter(
            decision,
            session,
            actor,
            parse_time(since) if since else None,
            parse_time(until) if until else None,
        )
        selection.check()
        async with open_runtime() as rt:
            _note_as_of(rt)
            if selection.everything:
                err_console.print(
                    f"the whole trail of tenant {rt.scope.tenant_id}, project "
                    f"{rt.scope.project_id}; narrow it with --decision, --session, --actor, "
                    "--since or --until",
                    markup=False,
                )
            entries = select(rt.app_pool, rt.scope, selection)
            if output is None:
                return await write_trail(entries, sys.stdout, fmt)
            with output.open("w", encoding="utf-8", newline="") as out:
                return await write_trail(entries, out, fmt)

    count = run(go)
    err_console.print(f"{count} events", markup=False)


@audit_app.command("context")
def context(context_graph_id: str = typer.Argument(..., help="A logged context graph id.")) -> None:
    """Re-derive a logged context graph from the log at its as-of position; exit 1 on mismatch."""
    from kg.context.reproduce import reproduce_context_graph

    async def go() -> bool:
        async with open_runtime() as rt:
            _live_only(rt, "reproduce a context graph (that replays into a scratch schema)")
            result = await reproduce_context_graph(rt, context_graph_id)
        (console if result.matches else err_console).print(str(result))
        return result.matches

    if not run(go):
        raise typer.Exit(1)
