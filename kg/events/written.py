"""What a caller wrote, so that its next read can wait for exactly that (read-your-writes).

A long-lived process (the MCP server) projects in the background, and its reads do not catch
up the log first: a read never waits on a backlog it did not write. A caller that wrote
something must still see it in its next read, so every committed append notes its last
position in the caller's :class:`Writes` (per MCP session: the server binds one to each
request with :func:`bind`), and the next read in that context waits until the projections
have reached that position, and no further (:meth:`kg.read.reader.Reader.snapshot`).

Outside a bound context (a one-shot CLI command, which catches up inline) nothing is noted.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar, Token


class Writes:
    """The newest log position a caller appended, per tenant and event type (a read waits
    only for the projections that read what the caller wrote: a logged context graph is
    waited for by the context graph records, not by the graph's nodes)."""

    def __init__(self) -> None:
        self._last: dict[str, dict[str, int]] = {}

    def note(self, tenant_id: str, position: int, event_types: Iterable[str]) -> None:
        """An append of ``event_types`` that ended at ``position``."""
        last = self._last.setdefault(tenant_id, {})
        for event_type in event_types:
            if position > last.get(event_type, 0):
                last[event_type] = position

    def last(self, tenant_id: str, event_types: Iterable[str] | None = None) -> int:
        """The newest position of an append to ``tenant_id``'s log holding one of
        ``event_types`` (None: any); 0 for none."""
        last = self._last.get(tenant_id, {})
        if event_types is None:
            return max(last.values(), default=0)
        return max((last.get(t, 0) for t in event_types), default=0)


_current: ContextVar[Writes | None] = ContextVar("kg_writes", default=None)


def current() -> Writes | None:
    """The writes of the caller this code runs for, when one is bound."""
    return _current.get()


def bind(writes: Writes) -> Token[Writes | None]:
    """Note appends made from here on (in this task and the tasks it starts) in ``writes``."""
    return _current.set(writes)


def unbind(token: Token[Writes | None]) -> None:
    _current.reset(token)
