"""The one owner of the read model: catch-up, the tenant snapshot, the log head, typed queries.

Every service that reads the projected graph goes through a :class:`Reader` (``rt.reader()``):

* ``catch_up()`` brings the projections up to the end of the log (the only way services do);
* ``head()`` is the log head the projections catch up to;
* ``snapshot()`` catches up, then opens one read-only REPEATABLE READ transaction scoped to the
  tenant (row-level security) and yields a :class:`Snapshot` on it, so every query of one
  service call sees the same state of the graph.

Policy is inside: a :class:`Snapshot` hands out nodes only through :meth:`Snapshot.governed`,
whose every node has passed ``kg.policies`` (denied ones dropped and counted), and context
graphs only through :meth:`Snapshot.build`, whose builder applies the same policies. The raw
projection reader stays private to this module, so a caller cannot forget the policies.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import asyncpg

from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.read.records import Records

if TYPE_CHECKING:
    from kg.policies.model import Policy
    from kg.projections.embedding_backlog import EmbeddingState
    from kg.projections.graph_reader import GraphReader
    from kg.read.governed import Governed
    from kg.read.memory import MemoryReader

# The graph side (projection reader, policies, models, builder) is imported on first use: a
# sync's comparison reads only need the snapshot's connection, and a commit's post-commit sync
# pays for every module it imports.


async def _nothing_to_catch_up() -> int:
    return 0


class Snapshot:
    """One consistent, read-only, tenant-scoped view of the projected graph."""

    def __init__(self, conn: asyncpg.Connection, scope: Scope) -> None:
        self.conn = conn
        self.scope = scope
        self._reader: GraphReader | None = None
        self._policies: dict[str, Policy] | None = None
        self._file_types: dict[str, str] = {}  # of the documents whose type a policy selects
        #: context graphs, their usage, decisions and node existence (no node content)
        self.records = Records(conn, scope)

    @property
    def _graph(self) -> GraphReader:
        if self._reader is None:
            from kg.projections.graph_reader import GraphReader

            self._reader = GraphReader(self.conn, self.scope)
        return self._reader

    @property
    def graph_reader(self) -> GraphReader:
        """The projected graph's rows as they are, unchecked: for the context builder, which
        asks ``kg.policies`` about every node itself (:meth:`governed` for everything else)."""
        return self._graph

    @property
    def memory(self) -> MemoryReader:
        """Ids and ranks of memory entities, ends of memory relations (:mod:`kg.read.memory`);
        their content only through :meth:`governed`."""
        from kg.read.memory import MemoryReader

        return MemoryReader(self.conn, self.scope)

    async def embedding_state(self) -> EmbeddingState:
        """The index's model and how many of the project's nodes wait for a vector: metadata
        of the index, no node content, so no policy applies."""
        return await self._graph.embedding_state()

    async def governed(self) -> Governed:
        """A policy-checked view for one query: its own tally of what the policies did."""
        from kg.policies.evaluate import Governance, selected_types
        from kg.read.governed import Governed

        if self._policies is None:
            self._policies = {p.policy_id: p for p in await self._graph.policies()}
            types = selected_types(self._policies.values())
            self._file_types = await self._graph.document_types(types)
        governance = Governance(dict(self._policies), file_types=self._file_types)
        return Governed(self._graph, governance)


class Reader:
    """The read model of one scope on one pool (see the module docstring)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        scope: Scope,
        *,
        catch_up: Callable[[], Awaitable[int]] = _nothing_to_catch_up,
        head: Callable[[], Awaitable[int]] | None = None,
    ) -> None:
        self.pool = pool
        self.scope = scope
        self._catch_up = catch_up
        self._head = head

    async def catch_up(self) -> int:
        """Bring every projection up to the end of the log; the number of events applied."""
        return await self._catch_up()

    async def head(self) -> int:
        """The head of the scope's tenant's log: the position the projections catch up to
        (positions are per tenant)."""
        if self._head is not None:
            return await self._head()
        from kg.db.tenancy import tenant_transaction
        from kg.events.store import log_head

        async with tenant_transaction(self.pool, self.scope.tenant_id) as conn:
            return await log_head(conn, self.scope.tenant_id)

    @asynccontextmanager
    async def snapshot(self, *, catch_up: bool = True) -> AsyncIterator[Snapshot]:
        """Catch up (unless told not to), then one read-only snapshot scoped to the tenant."""
        if catch_up:
            await self.catch_up()
        async with tenant_transaction(
            self.pool, self.scope.tenant_id, isolation="repeatable_read", readonly=True
        ) as conn:
            yield Snapshot(conn, self.scope)

    @asynccontextmanager
    async def records(self, *, catch_up: bool = True) -> AsyncIterator[Records]:
        """Only the record queries (context graphs, usage, decisions, node existence)."""
        async with self.snapshot(catch_up=catch_up) as snap:
            yield snap.records
