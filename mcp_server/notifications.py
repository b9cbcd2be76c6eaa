"""Change notifications for ``kg://`` resources: a client hears when what it reads changed.

The server tails the log (whoever appended: this server's tools, ``kg sync`` from a git hook,
``kg ingest``, another server), waits until the projections show the change, then tells:

* clients that subscribed to a resource (``resources/subscribe``, protocol versions up to
  2025-11-25): ``notifications/resources/updated`` for the URI they subscribed to, when its
  node changed, or an edge it shows (a section's entities, an entity's relationships), or, for
  a document, one of its sections;
* every such client: ``notifications/resources/list_changed`` when nodes came or went;
* clients listening the 2026-07-28 way (``subscriptions/listen``): the same two kinds of
  event, through the SDK's subscription bus, which filters them per stream.

Policies apply: a node a policy withholds is never announced (its URI is not even published
on the bus), so a notification cannot tell a client that something it may not read exists.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, SubscriptionBus
from mcp_types import EmptyResult, SubscribeRequestParams, UnsubscribeRequestParams

from kg.events.envelope import RecordedEvent
from kg.events.knowledge import EdgeAsserted, EdgeRetracted, NodeAsserted, NodeRetired
from kg.projections.normalise import graph_changes
from kg.runtime import Runtime
from mcp_server import resources
from mcp_server.state import AppState

_log = logging.getLogger(__name__)

#: URIs that stand for the listing (the root, a day's decisions): told when nodes come or go
LISTING = ""


def node_of(uri: str) -> str | None:
    """The node a ``kg://`` URI shows (:data:`LISTING` for the root and the decision days),
    or None for a URI that is not one of ours."""
    if uri == resources.ROOT or resources.DECISION_DAY.match(uri) is not None:
        return LISTING
    if (v := resources.SECTION.match(uri)) is not None:
        return f"section:{v['path']}#{v['anchor']}"
    if (v := resources.DOCUMENT.match(uri)) is not None:
        return f"document:{v['path']}"
    if (v := resources.DECISION.match(uri)) is not None:
        return f"decision:{v['id']}"
    if (v := resources.ENTITY_URI.match(uri)) is not None:
        return f"{v['type']}:{v['name']}"
    if (v := resources.NODE.match(uri)) is not None:
        return str(v["id"])
    return None


@dataclass
class _Client:
    """One connection's subscriptions: the session to send on and URI -> node id."""

    session: Any
    uris: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Changes:
    """What a batch of events changed: node ids (with the labels of asserted ones, for their
    URIs), and whether any node came or went."""

    nodes: dict[str, tuple[str, ...]]
    retired: frozenset[str]


def changes_in(events: Iterable[RecordedEvent]) -> Changes:
    nodes: dict[str, tuple[str, ...]] = {}
    retired: set[str] = set()
    for g in graph_changes(events):
        c = g.change
        if isinstance(c, NodeAsserted):
            nodes[c.node_id] = tuple(c.labels)
            retired.discard(c.node_id)
        elif isinstance(c, NodeRetired):
            nodes.setdefault(c.node_id, ())
            retired.add(c.node_id)
        elif isinstance(c, EdgeAsserted | EdgeRetracted):
            for end in (c.from_node, c.to_node):
                nodes.setdefault(end, ())
    for node in list(nodes):  # a document's page lists its sections
        kind, _, rest = node.partition(":")
        if kind == "section" and "#" in rest:
            nodes.setdefault(f"document:{rest.rpartition('#')[0]}", ())
    return Changes(nodes, frozenset(retired))


class ResourceWatch:
    """The subscriptions of this server's clients, and the task that tells them of changes."""

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[Any, _Client] = weakref.WeakKeyDictionary()
        #: node ids a subscriber could read when it subscribed (a retired node is announced
        #: only to those: its policies are gone with it)
        self._seen: set[str] = set()

    @staticmethod
    def _connection(session: Any) -> Any:
        # A ServerSession is made per request; the connection under it lives as long as the
        # client's (the SDK offers no public handle for it; see mcp_server.logs).
        return getattr(session, "_connection", session)

    async def subscribe(
        self, ctx: ServerRequestContext[AppState], params: SubscribeRequestParams
    ) -> EmptyResult:
        """``resources/subscribe``: remember the URI (one we do not serve is accepted and
        never fires, as the SDK's listen streams do)."""
        uri = str(params.uri)
        node = node_of(uri)
        if node is not None:
            client = self._clients.setdefault(self._connection(ctx.session), _Client(ctx.session))
            client.uris[uri] = node
            if node != LISTING and await _readable(ctx.lifespan_context.runtime, [node]):
                self._seen.add(node)
        return EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[AppState], params: UnsubscribeRequestParams
    ) -> EmptyResult:
        client = self._clients.get(self._connection(ctx.session))
        if client is not None:
            client.uris.pop(str(params.uri), None)
        return EmptyResult()

    async def run(self, rt: Runtime, bus: SubscriptionBus) -> None:
        """Tail the log from its head now, announcing each batch's changes once projected."""
        after = await rt.store.head(rt.scope.tenant_id)
        async for batch in rt.store.subscribe(after, scope=rt.scope):
            found = changes_in(batch)
            if not found.nodes:
                continue
            # A client reading the resource now sees the change: each lane of projections
            # that reads these events, on its own (a lane held for the graph's backlog would
            # keep a read waiting for its own logged context graph).
            await asyncio.gather(
                *(
                    rt.runner.catch_up(lane, tenant_id=rt.scope.tenant_id)
                    for lane in _lanes_reading(rt, {e.event_type for e in batch})
                )
            )
            try:
                await self._announce(rt, bus, found, batch[0].position, batch[-1].position)
            except Exception:  # a client gone mid-send must not stop the others' notifications
                _log.exception("resource notifications failed for positions %s-%s",
                               batch[0].position, batch[-1].position)  # fmt: skip

    async def _announce(
        self, rt: Runtime, bus: SubscriptionBus, found: Changes, first: int, last: int
    ) -> None:
        readable = await _readable(rt, list(found.nodes))  # id -> labels
        async with rt.reader().records(catch_up=False) as records:
            positions = await records.positions(list(readable))
        came = any(first <= p.first <= last for p in positions.values())
        gone = {n for n in found.retired if n in self._seen}
        listed = came or bool(found.retired)
        announce = set(readable) | gone
        for client in list(self._clients.values()):
            for uri, node in list(client.uris.items()):
                if node in announce or (node == LISTING and listed):
                    await client.session.send_resource_updated(uri)
            if listed:
                await client.session.send_resource_list_changed()
        for node in sorted(announce):
            labels = readable.get(node) or found.nodes.get(node, ())
            await bus.publish(ResourceUpdated(uri=resources.uri_of(node, labels)))
        if listed:
            await bus.publish(ResourceUpdated(uri=resources.ROOT))
            await bus.publish(ResourcesListChanged())
        # A retirement is announced only for a node a client could read before (its policies
        # go with it): one subscribed to, or one this server saw change since it started.
        self._seen |= set(readable)


async def _readable(rt: Runtime, node_ids: list[str]) -> dict[str, tuple[str, ...]]:
    """Those of ``node_ids`` that exist and that no policy denies, with their labels."""
    async with rt.reader().snapshot(catch_up=False) as snap:
        governed = await snap.governed()
        return {s.node_id: s.labels for s in await governed.admitted_subjects(node_ids)}


def _lanes_reading(rt: Runtime, types: set[str]) -> list[list[str]]:
    declared = {p.name: getattr(p, "event_types", None) for p in rt.runner.projections}

    def reads(name: str) -> bool:
        wanted: frozenset[str] | None = declared[name]
        return wanted is None or bool(wanted & types)

    return [lane for lane in rt.runner.lanes() if any(reads(name) for name in lane)]


async def watching(watch: ResourceWatch, rt: Runtime, bus: SubscriptionBus) -> asyncio.Task[None]:
    """Start :meth:`ResourceWatch.run` as a task (the lifespan cancels it at shutdown)."""
    task = asyncio.create_task(watch.run(rt, bus), name="kg resource notifications")
    task.add_done_callback(_log_failure)
    return task


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("resource notifications stopped", exc_info=task.exception())
