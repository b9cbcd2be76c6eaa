"""The events this process appended last, kept in memory for its own projection runner.

An ingest appends tens of thousands of events and its runner projects them seconds later:
reading them back from ``kg_events`` and decoding every row (payload and metadata jsonb) was a
quarter of the ingest's Python time. The store hands each committed append's records here; the
runner takes a batch from here instead of the database when the whole range is here.

What is served is exactly what a read of the log would return:

* only committed appends are added (after their transaction), as the store built them: the
  payload as the database gives it back (:func:`kg.db.jsonb.loads` of the canonical text the
  insert stored), the metadata likewise, the erasable content's body text;
* the window holds one contiguous run of a tenant's positions: an append that does not continue
  it (another process appended in between, or two of this process's appends were reported out
  of order) starts a new window, so a range the window covers has no event missing;
* content erased after an event was appended is not in the window: the runner asks the log for
  its newest ``ContentErased`` before using the window and reads from the database when one
  follows the start of the range (:meth:`ProjectionRunner._read_batch`); an append that erases
  (``then``) clears the tenant's window, and so does a rebuild.

The window is bounded (:data:`MAX_EVENTS` and :data:`MAX_BYTES` of stored text per tenant,
oldest dropped first), so a runner that falls far behind reads from the database as before, and
what every projection has applied is forgotten (:meth:`RecentEvents.forget`): a long-lived
process (the MCP server) keeps nothing once it has caught up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kg.events.envelope import RecordedEvent

MAX_EVENTS = 50_000
MAX_BYTES = 64 << 20


@dataclass
class _Window:
    first: int  # position of events[0]
    events: list[RecordedEvent] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)  # stored text of each event, in bytes
    size: int = 0

    def drop_first(self, count: int) -> None:
        self.size -= sum(self.sizes[:count])
        del self.events[:count]
        del self.sizes[:count]
        self.first += count

    @property
    def last(self) -> int:
        return self.first + len(self.events) - 1


class RecentEvents:
    """Per tenant, the newest contiguous run of positions this process appended."""

    def __init__(self, max_events: int = MAX_EVENTS, max_bytes: int = MAX_BYTES) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._windows: dict[str, _Window] = {}

    def add(self, tenant_id: str, records: Sequence[RecordedEvent], sizes: Sequence[int]) -> None:
        """Records of one committed append, in position order (contiguous: an append's
        positions are), with the size of each one's stored text."""
        if not records:
            return
        window = self._windows.get(tenant_id)
        if window is None or records[0].position != window.last + 1:
            window = self._windows[tenant_id] = _Window(records[0].position)
        window.events.extend(records)
        window.sizes.extend(sizes)
        window.size += sum(sizes)
        if len(window.events) > self.max_events:
            window.drop_first(len(window.events) - self.max_events)
        while window.size > self.max_bytes:
            window.drop_first(max(1, len(window.events) // 8))
        if not window.events:
            del self._windows[tenant_id]

    def forget(self, tenant_id: str, through: int) -> None:
        """Drop the events at positions up to ``through`` (every projection has them)."""
        window = self._windows.get(tenant_id)
        if window is None or through < window.first:
            return
        window.drop_first(min(through - window.first + 1, len(window.events)))
        if not window.events:
            del self._windows[tenant_id]

    def take(
        self, tenant_id: str, after: int, end: int, types: Sequence[str] | None
    ) -> list[RecordedEvent] | None:
        """The events at positions (``after``, ``end``] (only ``types``, when given), or None
        when the window does not hold all of those positions."""
        window = self._windows.get(tenant_id)
        if window is None or after + 1 < window.first or end > window.last:
            return None
        events = window.events[after + 1 - window.first : end + 1 - window.first]
        if types is None:
            return events
        wanted = frozenset(types)
        return [e for e in events if e.event_type in wanted]

    def clear(self, tenant_id: str | None = None) -> None:
        """Forget a tenant's window (every tenant's with None)."""
        if tenant_id is None:
            self._windows.clear()
        else:
            self._windows.pop(tenant_id, None)
