"""The application context shared by the CLI, the MCP server and the benchmarks.

``open_runtime`` connects to the database it is given (the local host's
:func:`kg.host.database.open_runtime` starts the embedded one when no URL is set), checks the
schema revision and opens the two pools. Everything user-facing is built on this one object,
so the CLI and the MCP tools are thin shells over the same functions.

With ``KG_AS_OF_SCHEMA`` set to a kept replay (``kg audit replay``), the runtime reads the graph
as it was at the replay's position instead, read-only: see :mod:`kg.read.as_of`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg

from kg.config import Scope, Settings, ensure_state_dir
from kg.db import revision
from kg.db.connect import create_pool, describe_database
from kg.db.urls import redact
from kg.embeddings import EmbeddingProvider, provider_from_config
from kg.embeddings.base import DeferredEmbedder
from kg.errors import ConfigurationError, SchemaNotReadyError
from kg.events import EventStore
from kg.events.recent import RecentEvents
from kg.projections import ProjectionContext, ProjectionRunner, default_projections
from kg.read.as_of import (
    AS_OF_ENV,
    AsOf,
    FrozenProjectionRunner,
    ReadOnlyEventStore,
    load_as_of,
    search_path,
)

if TYPE_CHECKING:
    from kg.read.reader import Reader


@dataclass
class Runtime:
    settings: Settings
    url: str
    app_pool: asyncpg.Pool
    system_pool: asyncpg.Pool

    _embedder: EmbeddingProvider | None = None
    _runner: ProjectionRunner | None = None
    _reader: Reader | None = None
    #: set when reading a kept replay (KG_AS_OF_SCHEMA): the pools see that schema, read-only
    as_of: AsOf | None = None
    #: this process's latest appends, which its runner projects without reading them back
    recent: RecentEvents = field(default_factory=RecentEvents)

    @property
    def embedder(self) -> EmbeddingProvider:
        """The configured embedding provider, built on first use (MiniLM loads lazily)."""
        if self._embedder is None:
            self._embedder = provider_from_config()
        return self._embedder

    @property
    def runner(self) -> ProjectionRunner:
        if self._runner is None:
            # Built when a projection first embeds: a command that projects nothing new never
            # constructs the embedder (an outage then cannot touch it).
            ctx = ProjectionContext(DeferredEmbedder(lambda: self.embedder))
            self._runner = (
                ProjectionRunner(self.system_pool, default_projections(), ctx, recent=self.recent)
                if self.as_of is None
                else FrozenProjectionRunner(
                    self.system_pool, default_projections(), ctx, self.as_of
                )
            )
        return self._runner

    def reader(self) -> Reader:
        """The read model of this runtime's scope: every service reads the graph through it
        (catch-up, the tenant snapshot, the log head, typed and policy-checked queries)."""
        if self._reader is None:
            from kg.read.reader import Reader  # the read path loads with the first read

            self._reader = Reader(
                self.app_pool,
                self.scope,
                # the scope's tenant only: a command never waits on another tenant's backlog
                catch_up=lambda: self.runner.catch_up(tenant_id=self.scope.tenant_id),
                # a read that waits for its caller's own write projects up to it, no further
                catch_up_until=lambda names, position: self.runner.catch_up(
                    names, tenant_id=self.scope.tenant_id, until=position
                ),
                head=lambda: self.system_store.head(self.scope.tenant_id),
                projections={
                    p.name: getattr(p, "event_types", None) for p in self.runner.projections
                },
            )
        return self._reader

    async def catch_up(self) -> int:
        """Bring every projection up to the end of the scope's tenant's log: the reader's
        catch-up (kept here for the write-side commands that project what they appended)."""
        return await self.reader().catch_up()

    @property
    def scope(self) -> Scope:
        return self.settings.scope

    @property
    def store(self) -> EventStore:
        """The store on the restricted application role (RLS on)."""
        if self.as_of is not None:
            return ReadOnlyEventStore(self.app_pool, self.as_of)
        return EventStore(self.app_pool, self.recent)

    @property
    def system_store(self) -> EventStore:
        """The store across tenants, for projections and the audit."""
        if self.as_of is not None:
            return ReadOnlyEventStore(self.system_pool, self.as_of)
        return EventStore(self.system_pool)

    def in_scope(self, scope: Scope, project_root: Path) -> Runtime:
        """The same database, pools and embedder, in another scope and project root (the
        examples that ``kg demo`` ingests into scopes of their own)."""
        settings = dataclasses.replace(self.settings, scope=scope, project_root=project_root)
        return Runtime(settings, self.url, self.app_pool, self.system_pool, self.embedder)

    def describe(self) -> str:
        return describe_database(self.settings, self.url)


async def check_schema(pool: asyncpg.Pool, url: str) -> str:
    current = await revision.current_revision(pool)
    head = revision.head_revision()
    if current != head:
        raise SchemaNotReadyError(
            f"the database at {redact(url)} is at schema revision {current or 'none'}, this kg "
            f"needs {head}: run `kg db upgrade` (or `kg init` for a new database)"
        )
    return current


@asynccontextmanager
async def open_runtime(
    settings: Settings | None = None,
    *,
    url: str | None = None,
    max_size: int = 10,
    embedder: EmbeddingProvider | None = None,
    as_of_schema: str | None = None,
    connect_timeout: float | None = None,
    command_timeout: float | None = None,
) -> AsyncIterator[Runtime]:
    """``as_of_schema`` (default: ``KG_AS_OF_SCHEMA``) opens a kept replay read-only.

    ``connect_timeout`` bounds each connection's start-up (asyncpg's default is 60 s, which a
    server that accepts connections and never answers makes a git hook wait in full);
    ``command_timeout`` bounds every statement. Either raises :class:`TimeoutError` (a connect
    timeout arrives as :class:`~kg.errors.DatabaseUnavailableError`)."""
    settings = settings or Settings.from_env()
    if settings.state_dir.exists():  # also gives a folder made by an older kg its .gitignore
        ensure_state_dir(settings.state_dir)
    url = url or settings.database_url
    if not url:
        raise ConfigurationError(
            "no database URL: set KG_DATABASE_URL, or open the runtime through "
            "kg.host.database.open_runtime, which starts the project's embedded server"
        )
    schema = as_of_schema or os.environ.get(AS_OF_ENV) or None
    path = search_path(schema) if schema else None
    limits: dict[str, Any] = {}
    if connect_timeout is not None:
        limits["timeout"] = connect_timeout
    if command_timeout is not None:
        limits["command_timeout"] = command_timeout
    system_pool = await create_pool(
        url, app_role=False, max_size=max_size, search_path=path, read_only=bool(schema), **limits
    )
    try:
        # The application pool connects while the schema is checked (a connection's start-up
        # is a round trip or three each); it is only used once the check passed.
        connecting = asyncio.ensure_future(
            create_pool(
                url,
                app_role=True,
                max_size=max_size,
                search_path=path,
                read_only=bool(schema),
                **limits,
            )
        )
        try:
            await check_schema(system_pool, url)
            as_of = await load_as_of(system_pool, schema) if schema else None
        except BaseException:
            await _discard_pool(connecting)
            raise
        app_pool = await connecting
        try:
            yield Runtime(settings, url, app_pool, system_pool, embedder, as_of=as_of)
        finally:
            await close_pool(app_pool)
    finally:
        await close_pool(system_pool)


async def _discard_pool(connecting: asyncio.Future[asyncpg.Pool]) -> None:
    """Close a pool still connecting, or swallow its failure (an unmigrated database has no
    application role yet: the schema check's error is the one to report)."""
    try:
        pool = await connecting
    except BaseException:  # the caller re-raises the error that matters
        return
    await close_pool(pool)


async def close_pool(pool: asyncpg.Pool, grace: float = 10.0) -> None:
    """Close ``pool``, waiting at most ``grace`` seconds for its connections to come back.

    ``Pool.close`` waits for every connection to be released; one held by a task that never
    finishes would keep a stopping process (the MCP server on SIGTERM) alive forever.
    Cancelled by the timeout, asyncpg terminates the pool instead."""
    try:
        await asyncio.wait_for(pool.close(), timeout=grace)
    except TimeoutError:
        pool.terminate()
