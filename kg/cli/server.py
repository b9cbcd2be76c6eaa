"""``kg server status|stop``: the project's embedded PostgreSQL (``.kg/pgdata``)."""

from __future__ import annotations

import typer

from kg.cli.common import console, fail
from kg.config import Settings

server_app = typer.Typer(
    help="The project's embedded PostgreSQL: is it running, who holds it, stop it.",
    no_args_is_help=True,
)


def _pgdata_and_note() -> tuple[Settings, str | None]:
    settings = Settings.from_env()
    note = (
        "note: KG_DATABASE_URL is set, so kg uses that server, not this embedded one"
        if settings.database_url
        else None
    )
    return settings, note


@server_app.command("status")
def status() -> None:
    """Whether the embedded server runs (pid, data folder, socket) and which kg processes
    hold it. Handles left by killed processes are pruned and named."""
    from kg.host.server_control import server_status

    settings, note = _pgdata_and_note()
    found = server_status(settings.state_dir / "pgdata")
    if note:
        console.print(note, markup=False)
    if not found.initialised:
        console.print(f"embedded PostgreSQL in {found.pgdata}: not initialised", markup=False)
    elif found.running:
        since = f", since {found.started:%Y-%m-%d %H:%M:%S}" if found.started else ""
        socket = f", socket in {found.socket_dir}" if found.socket_dir else ""
        console.print(
            f"embedded PostgreSQL in {found.pgdata}: running (pid {found.pid}{since}{socket})",
            markup=False,
        )
    else:
        console.print(f"embedded PostgreSQL in {found.pgdata}: not running", markup=False)
    if found.holders:
        console.print(f"held by {len(found.holders)} kg process(es):")
        for holder in found.holders:
            console.print(f"  pid {holder.pid}: {holder.command}", markup=False)
    elif found.running:
        from kg.host.idle import IDLE_ENV, idle_seconds, watchdog_pid

        watchdog = watchdog_pid(found.pgdata)
        if watchdog is not None:
            console.print(
                f"held by no kg process: it stops {idle_seconds():.0f} s after the last kg "
                f"exited ({IDLE_ENV}; idle watchdog pid {watchdog}), or with `kg server stop`"
            )
            from kg.host.resident import RESIDENT_ENV, socket_path

            if socket_path(found.pgdata.parent).exists():
                console.print(
                    f"kg commands run in the watchdog's warm interpreter ({RESIDENT_ENV}=0 "
                    "runs each in its own process)",
                    markup=False,
                )
        else:
            console.print("held by no kg process: stop it with `kg server stop`")
    from kg.host.watcher import running_watcher

    watcher = running_watcher(settings.state_dir)
    if watcher is not None:
        console.print(
            f"kg watch runs in the background (pid {watcher.pid}, log {watcher.log}); it "
            "stops with the server, or with `kg watch --stop`",
            markup=False,
        )
    if found.pruned:
        pids = ", ".join(str(p) for p in found.pruned)
        console.print(f"removed the handles of processes that are gone: pid {pids}")


@server_app.command("stop")
def stop(
    force: bool = typer.Option(
        False, "--force", help="Stop it even while kg processes hold it (cuts their connections)."
    ),
) -> None:
    """Stop the embedded server cleanly. Refused while live kg processes hold it, unless
    --force."""
    from kg.errors import KgError
    from kg.host.server_control import stop_server

    settings, note = _pgdata_and_note()
    if note:
        console.print(note, markup=False)
    try:
        was = stop_server(settings.state_dir / "pgdata", force=force)
    except KgError as exc:
        fail(str(exc))
        return
    if not was.running:
        state = "not running" if was.initialised else "not initialised"
        console.print(f"embedded PostgreSQL in {was.pgdata}: {state}", markup=False)
        return
    console.print(f"stopped the embedded PostgreSQL in {was.pgdata} (pid {was.pid})", markup=False)
