"""The one owner of the read model: catch-up, the tenant snapshot, the log head, typed queries.

Every service that reads the projected graph goes through a :class:`Reader` (``rt.reader()``):

* ``catch_up()`` brings the projections up to the end of the log (the only way services do);
* ``head()`` is the log head the projections catch up to;
* ``snapshot()`` opens one read-only REPEATABLE READ transaction scoped to the tenant
  (row-level security) and yields a :class:`Snapshot` on it, so every query of one service
  call sees the same state of the graph; :meth:`Snapshot.state` says where that state stands in
  the log (``projected_to``, ``head``, ``behind``).

How current a snapshot is depends on who projects:

* inline (one-shot CLI commands, tests): a snapshot that finds the projections behind the log
  catches them up first and opens again. The command is the writer, or the only reader: it
  must see the whole log, and nobody else would project it.
* background (``Reader.background``, set by a long-lived process whose projector tails the
  log: the MCP server): a snapshot never waits on a backlog its caller did not write. It reads
  the projected state as it is and says how far behind it is; it waits only for the caller's
  own last write (:mod:`kg.events.written`), projecting up to that position and no further,
  for at most :attr:`Reader.wait_timeout` seconds (then :class:`~kg.errors.ProjectionLagError`).
  One exception keeps the one enforcement point current: when a policy event is not projected
  yet, the read waits for the log as it found it (:data:`POLICY_EVENTS`).

Policy is inside: a :class:`Snapshot` hands out nodes only through :meth:`Snapshot.governed`,
whose every node has passed ``kg.policies`` (denied ones dropped and counted), and context
graphs only through :meth:`Snapshot.build`, whose builder applies the same policies. The raw
projection reader stays private to this module, so a caller cannot forget the policies.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from kg.config import Scope
from kg.db.tenancy import tenant_snapshot
from kg.errors import ProjectionLagError
from kg.events import written
from kg.events.store import log_head_sql
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


#: How long a read waits for the projections to reach its caller's own write.
WAIT_TIMEOUT = 30.0

#: Events that change what the policies are. A read never runs on policies older than the log's:
#: when one of these is not projected yet, the read waits for the log as it found it (the policy
#: and what was appended with it, its GOVERNED_BY edges). Rare, so cheap under write load.
POLICY_EVENTS = ["PolicyDefined", "PolicyChanged", "PolicyRetired"]

# The newest event of one type, by the (tenant_id, event_type, position) index: one type per
# subquery (with ``event_type = ANY(...)`` the planner read every event of the tenant, 20 ms at
# 50,000 events).
_NEWEST = (
    "coalesce((SELECT max(e.position) FROM kg_events e"
    " WHERE e.tenant_id = $1 AND e.event_type = '{}'), 0)"
)

# Where the snapshot stands, in one round trip: the position every projection has reached (0
# when one has no checkpoint row yet), kg_nodes' own, the log's head, the newest erasure (an
# erasure re-derives rows before the checkpoints move: cached policies are keyed on it too) and
# the newest policy event (each by the (tenant_id, event_type, position) index).
_STATE = f"""
SELECT CASE WHEN count(c.name) < coalesce(cardinality($2::text[]), 0) THEN 0
            ELSE coalesce(min(c.position), 0) END AS projected,
       coalesce(max(c.position) FILTER (WHERE c.name = 'kg_nodes'), 0) AS nodes_at,
       {log_head_sql("$1")} AS head,
       {_NEWEST.format("ContentErased")} AS erased_at,
       greatest({", ".join(_NEWEST.format(t) for t in POLICY_EVENTS)}) AS policy_at,
       coalesce(array_agg(c.name), '{{}}') AS names,
       coalesce(array_agg(c.position), '{{}}') AS positions
  FROM projection_checkpoints c
 WHERE c.tenant_id = $1 AND ($2::text[] IS NULL OR c.name = ANY($2::text[]))
"""


@dataclass(frozen=True)
class ReadState:
    """Where one snapshot stands in its tenant's log."""

    #: every projection has applied the log up to this position
    projected_to: int
    #: the log's newest committed position when the snapshot was taken
    head: int
    #: kg_nodes' checkpoint (the policies and a context graph's as-of position are read at it)
    nodes_at: int
    #: the newest ContentErased (0: none)
    erased_at: int
    #: the newest event defining, changing or retiring a policy (0: none)
    policy_at: int = 0
    #: each projection's checkpoint (one without a row is missing)
    checkpoints: Mapping[str, int] = field(default_factory=dict)

    @property
    def behind(self) -> int:
        """Events in the log that the snapshot does not reflect yet."""
        return max(0, self.head - self.projected_to)

    def warning(self) -> str | None:
        """What a result read from this state says when it is behind the log (None: current)."""
        if not self.behind:
            return None
        return (
            f"read at log position {self.projected_to} while the log is at {self.head}: "
            f"{self.behind} newer events are still being projected (by the background "
            "projector), so the newest changes of other writers may be missing; call again "
            "for them (your own writes are always included)"
        )


@dataclass
class _PolicyCache:
    """The policies (and the documents their type selectors cover) as of one projected state:
    a snapshot at the same kg_nodes checkpoint (and erasure) reads the same rows, so the next
    call reuses them instead of reading them again."""

    key: tuple[str, int, int] | None = None
    policies: dict[str, Policy] | None = None
    file_types: dict[str, str] | None = None


class Snapshot:
    """One consistent, read-only, tenant-scoped view of the projected graph."""

    def __init__(
        self,
        conn: asyncpg.Connection,
        scope: Scope,
        projections: Sequence[str] = (),
        cache: _PolicyCache | None = None,
    ) -> None:
        self.conn = conn
        self.scope = scope
        self._projections = list(projections)
        self._cache = cache
        self._state: ReadState | None = None
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

    async def state(self) -> ReadState:
        """Where this snapshot stands in the log (read once, in the snapshot's transaction)."""
        if self._state is None:
            names = self._projections or None  # None: every projection with a checkpoint
            row = await self.conn.fetchrow(_STATE, self.scope.tenant_id, names)
            assert row is not None  # an aggregate without GROUP BY: always one row
            self._state = ReadState(
                int(row["projected"]), int(row["head"]), int(row["nodes_at"]),
                int(row["erased_at"]), int(row["policy_at"]),
                dict(zip(row["names"], map(int, row["positions"]), strict=True)),
            )  # fmt: skip
        return self._state

    async def governed(self) -> Governed:
        """A policy-checked view for one query: its own tally of what the policies did."""
        from kg.policies.evaluate import Governance
        from kg.read.governed import Governed

        if self._policies is None:
            await self._load_policies()
        assert self._policies is not None
        governance = Governance(dict(self._policies), file_types=self._file_types)
        return Governed(self._graph, governance)

    async def _load_policies(self) -> None:
        from kg.policies.evaluate import selected_types

        cache = self._cache
        key: tuple[str, int, int] | None = None
        if cache is not None and self._projections:
            state = await self.state()
            key = (self.scope.project_id, state.nodes_at, state.erased_at)
            if cache.key == key and cache.policies is not None:
                self._policies, self._file_types = cache.policies, cache.file_types or {}
                return
        self._policies = {p.policy_id: p for p in await self._graph.policies()}
        types = selected_types(self._policies.values())
        self._file_types = await self._graph.document_types(types)
        if cache is not None and key is not None:
            cache.key, cache.policies, cache.file_types = key, self._policies, self._file_types


class Reader:
    """The read model of one scope on one pool (see the module docstring)."""

    def __init__(
        self,
        pool: asyncpg.Pool,
        scope: Scope,
        *,
        catch_up: Callable[[], Awaitable[int]] = _nothing_to_catch_up,
        catch_up_until: Callable[[Sequence[str], int], Awaitable[int]] | None = None,
        head: Callable[[], Awaitable[int]] | None = None,
        projections: Mapping[str, frozenset[str] | None] | Sequence[str] = (),
    ) -> None:
        self.pool = pool
        self.scope = scope
        self._catch_up = catch_up
        self._catch_up_until = catch_up_until
        self._head = head
        #: the names of the projections a snapshot's state covers (none: no state, no cache)
        self.projections = tuple(projections)
        #: the event types each projection reads (None: every type)
        self._reads: dict[str, frozenset[str] | None] = (
            dict(projections) if isinstance(projections, Mapping) else {}
        )
        #: a background projector keeps the projections current (see the module docstring)
        self.background = False
        #: seconds a read waits for its caller's own write to be projected
        self.wait_timeout = WAIT_TIMEOUT
        self._cache = _PolicyCache()

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
        """One read-only snapshot scoped to the tenant, current as the module docstring says
        (``catch_up=False``: as it is, whatever the mode).

        Raises:
            ProjectionLagError: (background) the caller's own write was not projected within
                :attr:`wait_timeout` seconds.
        """
        if not catch_up or not self.projections:
            if catch_up:  # no state to look at: catch up first, as always
                await self.catch_up()
            async with self._open() as snap:
                yield snap
            return
        for attempt in range(2):
            async with self._open() as snap:
                state = await snap.state()
                wanted = self._wanted(state)
                if wanted is None or attempt == 1:
                    yield snap
                    return
            await self._reach(wanted, state)

    def _wanted(self, state: ReadState) -> tuple[list[str], int] | None:
        """The projections to bring further before this read and the position to bring them
        to; None when there is nothing to wait for."""
        everything = list(self.projections)
        if not self.background:
            return (everything, state.head) if state.projected_to < state.head else None
        if state.policy_at > state.projected_to:  # a policy change applies at once
            return everything, state.head
        writes = written.current()
        if writes is None:
            return None
        tenant = self.scope.tenant_id
        # Each projection up to the caller's last write of an event it reads, no further.
        floors = {}
        for name in self.projections:
            floor = writes.last(tenant, self._reads.get(name))
            if state.checkpoints.get(name, 0) < floor:
                floors[name] = floor
        return (sorted(floors), max(floors.values())) if floors else None

    async def _reach(self, wanted: tuple[list[str], int], state: ReadState) -> None:
        names, position = wanted
        if not self.background or self._catch_up_until is None:
            await self.catch_up()
            return
        try:
            await asyncio.wait_for(self._catch_up_until(names, position), self.wait_timeout)
        except TimeoutError:
            raise ProjectionLagError(
                f"your last write (log position {position}) is not projected after "
                f"{self.wait_timeout:g} s: the projections are at {state.projected_to} of "
                f"{state.head}. The background projector is far behind or stopped: retry the "
                "call, and check `kg projections status`"
            ) from None

    @asynccontextmanager
    async def _open(self) -> AsyncIterator[Snapshot]:
        async with tenant_snapshot(self.pool, self.scope.tenant_id) as conn:
            yield Snapshot(conn, self.scope, self.projections, self._cache)

    @asynccontextmanager
    async def records(self, *, catch_up: bool = True) -> AsyncIterator[Records]:
        """Only the record queries (context graphs, usage, decisions, node existence)."""
        async with self.snapshot(catch_up=catch_up) as snap:
            yield snap.records
