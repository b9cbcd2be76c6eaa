"""Which database a local ``kg`` process uses, and the runtime opened on it.

``KG_DATABASE_URL`` when it is set; otherwise the project's embedded server, started (or
joined) here. The database layer only ever connects to the URL this gives it, so starting
and keeping servers stays in the local host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from kg.config import Settings, ensure_state_dir
from kg.runtime import Runtime
from kg.runtime import open_runtime as open_runtime_at


def database_url(settings: Settings, *, keep_running: bool = False) -> str:
    """``KG_DATABASE_URL`` when set, else the URL of the project's embedded server (started)."""
    if settings.database_url:
        return settings.database_url
    from kg.host.embedded import start_embedded

    return start_embedded(ensure_state_dir(settings.state_dir), keep_running=keep_running)


@asynccontextmanager
async def open_runtime(
    settings: Settings | None = None, *, url: str | None = None, **options: Any
) -> AsyncIterator[Runtime]:
    """:func:`kg.runtime.open_runtime` on :func:`database_url` (the embedded server started
    when no URL is configured): what the CLI, the hooks and the MCP server open."""
    settings = settings or Settings.from_env()
    async with open_runtime_at(settings, url=url or database_url(settings), **options) as runtime:
        yield runtime
