"""Connections: open asyncpg pools on a given URL, with actionable errors.

Two kinds of pool exist on purpose:

* the *application* pool runs as the ``kg_app`` role: it may only SELECT and INSERT on
  ``kg_events``, and row-level security limits every read to the tenant set per transaction;
* the *system* pool runs as the connecting user and is used by migrations, the projection
  runner (which reads the whole log across tenants) and the audit.
"""

from __future__ import annotations

import json
import os
from typing import Any

import asyncpg

from kg.config import Settings
from kg.db.urls import asyncpg_url, redact, with_user
from kg.errors import DatabaseUnavailableError
from kg.json_text import decode_json

APP_ROLE = "kg_app"


def describe_database(settings: Settings, url: str) -> str:
    """A one-line, password-free description of the database in use."""
    if settings.database_url:
        return f"external PostgreSQL at {redact(url)} (KG_DATABASE_URL)"
    return f"embedded PostgreSQL in {settings.state_dir / 'pgdata'} ({redact(url)})"


def unreachable(url: str, exc: BaseException) -> DatabaseUnavailableError:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DatabaseUnavailableError(
        f"cannot connect to {redact(url)}: {reason}. Check that the server is running and the "
        "URL, user and password are right; or unset KG_DATABASE_URL to use the embedded "
        "database in the project's .kg/ folder."
    )


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=json.dumps, decoder=decode_json, schema="pg_catalog")


# URLs (redacted) whose application pool could not log in as kg_app and fell back to SET ROLE
# from the connecting user: `kg status` says so, since that user can undo the restriction.
SET_ROLE_FALLBACK: set[str] = set()

APP_PASSWORD_ENV = "KG_APP_PASSWORD"


async def create_pool(
    url: str,
    *,
    app_role: bool = True,
    min_size: int = 1,
    max_size: int = 10,
    search_path: str | None = None,
    read_only: bool = False,
    **kwargs: Any,
) -> asyncpg.Pool:
    """Open a pool; ``app_role`` makes every connection the restricted ``kg_app`` role;
    ``read_only`` makes every transaction on it read-only (server-enforced).

    The application pool logs in as ``kg_app`` itself (password from ``KG_APP_PASSWORD`` where
    the server asks for one), so a statement cannot ``SET ROLE`` its way back to a superuser.
    Where the server refuses that login (a database not yet at migration 0009, or no password
    configured for ``kg_app``), it falls back to ``SET ROLE kg_app`` from the URL's user and
    records the fact in :data:`SET_ROLE_FALLBACK`, which ``kg status`` reports.
    """
    settings: dict[str, str] = {"application_name": "kg"}
    if search_path:
        settings["search_path"] = search_path
    if read_only:
        settings["default_transaction_read_only"] = "on"
    if app_role:
        login_url = with_user(url, APP_ROLE, os.environ.get(APP_PASSWORD_ENV))
        try:
            return await _open(login_url, settings, min_size, max_size, kwargs)
        except DatabaseUnavailableError as exc:
            if not isinstance(exc.__cause__, _LOGIN_REFUSED):
                raise
        SET_ROLE_FALLBACK.add(redact(url))
        settings["role"] = APP_ROLE
    return await _open(url, settings, min_size, max_size, kwargs)


# The server refused kg_app's login: no LOGIN attribute yet, a wrong or missing password, or
# pg_hba.conf has no line for it.
_LOGIN_REFUSED = (
    asyncpg.InvalidAuthorizationSpecificationError,
    asyncpg.InvalidPasswordError,
)


async def _open(
    url: str, settings: dict[str, str], min_size: int, max_size: int, kwargs: dict[str, Any]
) -> asyncpg.Pool:
    try:
        pool = await asyncpg.create_pool(
            asyncpg_url(url),
            min_size=min_size,
            max_size=max_size,
            server_settings=settings,
            init=_init_connection,
            **kwargs,
        )
    except asyncpg.InvalidParameterValueError as exc:
        raise DatabaseUnavailableError(
            f"the database at {redact(url)} has no role {APP_ROLE!r} ({exc}). "
            "Run `kg db upgrade` to create the schema and its roles."
        ) from exc
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise unreachable(url, exc) from exc
    assert pool is not None
    return pool
