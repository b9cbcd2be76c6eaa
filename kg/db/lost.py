"""Recognising "the database went away" among the errors a driver raises mid-command.

A server stopped or killed under a running command surfaces as one of several asyncpg
exceptions (or an ``OSError`` from the socket), often inside an exception group, and used to
reach the user as hundreds of lines of tracebacks. :func:`as_unavailable` turns any of them
into one :class:`~kg.errors.DatabaseUnavailableError` that says what happened and that a rerun
resumes; the CLI and the MCP server call it at their boundary.
"""

from __future__ import annotations

import logging

import asyncpg

from kg.errors import DatabaseUnavailableError

# Errors that mean the server closed the connection, is shutting down, or cannot be reached.
_LOST: tuple[type[BaseException], ...] = (
    asyncpg.PostgresConnectionError,  # ConnectionDoesNotExistError, ConnectionFailureError, ...
    asyncpg.AdminShutdownError,  # "terminating connection due to administrator command"
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,  # "the database system is shutting down / starting up"
    ConnectionError,  # refused, reset, broken pipe
)
_MESSAGE = (
    "the database went away during the command ({reason}). Everything committed before it "
    "stopped is kept: start the database again (the embedded one starts by itself) and rerun "
    "the same command; a backfill or an ingest resumes where it stopped."
)


def connection_lost(exc: BaseException) -> BaseException | None:
    """The error in ``exc`` (itself, a member of an exception group, or a cause) that says the
    connection to the database was lost, or None when ``exc`` is about something else."""
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if _is_lost(current):
            return current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                stack.append(linked)
    return None


def _is_lost(exc: BaseException) -> bool:
    if isinstance(exc, _LOST):
        return True
    if isinstance(exc, asyncpg.InterfaceError):
        # Also raised for misuse ("another operation is in progress"): only a closed
        # connection counts.
        return "closed" in str(exc) or "connection" in str(exc).lower()
    if isinstance(exc, OSError):
        # A missing socket file (FileNotFoundError) is a lost server only when the driver
        # raised it, not when a command could not find its own input file.
        return _raised_in_driver(exc)
    return False


def _raised_in_driver(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if "asyncpg" in tb.tb_frame.f_code.co_filename:
            return True
        tb = tb.tb_next
    return False


def as_unavailable(exc: BaseException) -> DatabaseUnavailableError | None:
    """A :class:`DatabaseUnavailableError` for a lost connection, else None."""
    lost = connection_lost(exc)
    if lost is None:
        return None
    if isinstance(lost, OSError) and lost.strerror:
        reason = f"cannot reach the server: {lost.strerror}"
    else:
        reason = " ".join(str(lost).split())[:160] or type(lost).__name__
    return DatabaseUnavailableError(_MESSAGE.format(reason=reason))


class _QuietWhenLost(logging.Filter):
    """Drops the driver's own log records about a lost connection (asyncpg's pool logs a
    traceback for each failed reconnect, dozens per second of outage): the command reports the
    loss once, through :func:`as_unavailable`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or connection_lost(error) is None


_QUIET = _QuietWhenLost()


def quiet_driver_logs() -> None:
    """Install the filter on asyncpg's loggers (idempotent); the CLI calls it at start."""
    for name in ("asyncpg", "asyncpg.pool"):
        logger = logging.getLogger(name)
        if _QUIET not in logger.filters:
            logger.addFilter(_QUIET)
