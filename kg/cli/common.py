"""Shared CLI plumbing: run a coroutine, turn KgError (and a lost database connection) into
a clear message and exit code 1."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import typer
from rich.markup import escape

from kg.cli.consoles import console, err_console
from kg.errors import KgError

if TYPE_CHECKING:
    from kg.runtime import Runtime

T = TypeVar("T")
__all__ = ["allowed", "console", "err_console", "fail", "run"]


def run(make: Callable[[], Awaitable[T]]) -> T:
    """Run an async command; a :class:`KgError` becomes ``error: ...`` on stderr and exit 1.

    So does a database connection lost mid-command (:mod:`kg.db.lost`): one line saying so
    and that a rerun resumes, not the driver's tracebacks."""

    async def wrapped() -> T:
        return await make()

    from kg.db.lost import quiet_driver_logs

    quiet_driver_logs()
    try:
        return asyncio.run(wrapped())
    except KgError as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}")
        raise typer.Exit(1) from None
    except Exception as exc:
        from kg.db.lost import as_unavailable

        lost = as_unavailable(exc)
        if lost is None:
            raise
        err_console.print(f"[bold red]error:[/] {escape(str(lost))}")
        raise typer.Exit(1) from None


def fail(message: str, code: int = 1) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


async def allowed(rt: Runtime, action: str, node_ids: Sequence[str] = ()) -> None:
    """Refuse (and log) the command unless policies let the CLI user (``cli:<login>``, or
    ``KG_ACTOR``) run ``action`` (the MCP tool it mirrors) on ``node_ids``."""
    from kg.events import EventMetadata
    from kg.governance.enforce import cli_actor, require

    actor = cli_actor()
    await require(rt, actor, action, node_ids, EventMetadata(actor=actor))


def stop_on_signals() -> asyncio.Event:
    """An event that Ctrl-C or SIGTERM sets, for a command that runs until told to stop.
    Call it inside the running event loop."""
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop
