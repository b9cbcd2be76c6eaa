"""Progress of a long command (ingest, sync, backfill, projection catch-up, replay).

The application functions count what they do on a :class:`Progress` they are given: files
parsed, events appended, events projected, texts embedded, rows imported. The base class only
counts; the CLI passes a renderer (:mod:`kg.cli.progress`) that shows the counts with their
rate and an estimate of the time left. The MCP tools and the hooks pass nothing.

Counters are plain names; a counter with a total (``files parsed``: 1,046) gets an ETA.
Calls come from the event loop's thread (the embedding reports between its chunks), so no
locking is needed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

FILES_READ = "files read"
FILES_PARSED = "files parsed"
EVENTS_APPENDED = "events appended"
EVENTS_PROJECTED = "events projected"
TEXTS_EMBEDDED = "texts embedded"
ROWS_IMPORTED = "rows imported"
EVENTS_REPLAYED = "events replayed"


@dataclass(slots=True)
class Counter:
    name: str
    value: int = 0
    total: int | None = None
    started: float = field(default_factory=time.monotonic)

    def rate(self, now: float) -> float:
        """Per second since the counter was first touched (0 before a second has passed)."""
        elapsed = now - self.started
        return self.value / elapsed if elapsed >= 1.0 else 0.0

    def eta(self, now: float) -> float | None:
        """Seconds left at the current rate, or None when it cannot be told."""
        if self.total is None:
            return None
        left = max(0, self.total - self.value)
        if left == 0:
            return 0.0
        rate = self.rate(now)
        return left / rate if rate > 0 else None


class Progress:
    """Counts of a long command. Subclasses render them in :meth:`changed`."""

    def __init__(self) -> None:
        self.counters: dict[str, Counter] = {}
        self.started = time.monotonic()

    def counter(self, name: str) -> Counter:
        found = self.counters.get(name)
        if found is None:
            found = self.counters[name] = Counter(name)
        return found

    def total(self, name: str, total: int) -> None:
        """Say how many of ``name`` there will be (it may grow: appends keep coming)."""
        self.counter(name).total = total
        self.changed()

    def add(self, name: str, n: int = 1) -> None:
        if n:
            self.counter(name).value += n
            self.changed()

    def changed(self) -> None:
        """A count moved; renderers decide whether to show it now."""

    def close(self) -> None:
        """The command is done (or failed): stop rendering."""

    def eta(self, now: float | None = None) -> float | None:
        """The longest of the counters' estimates: the command ends with its slowest part."""
        at = time.monotonic() if now is None else now
        etas = [e for c in self.counters.values() if (e := c.eta(at)) is not None]
        return max(etas) if etas else None

    def line(self, now: float | None = None) -> str:
        """One plain line: each counter (with its total and rate), elapsed time and ETA."""
        at = time.monotonic() if now is None else now
        parts = []
        for c in self.counters.values():
            text = f"{c.name} {c.value:,}" + (f"/{c.total:,}" if c.total is not None else "")
            rate = c.rate(at)
            if rate:
                text += f" ({rate:,.1f}/s)"
            parts.append(text)
        text = ", ".join(parts) + f"; {format_seconds(at - self.started)} elapsed"
        eta = self.eta(at)
        if eta is not None:
            text += f", ETA {format_seconds(eta)}"
        return text


class _Silent(Progress):
    """Shared by every caller without a display, so it keeps no counts at all."""

    def counter(self, name: str) -> Counter:
        return Counter(name)  # a throwaway: the shared instance must never accumulate

    def total(self, name: str, total: int) -> None:
        pass

    def add(self, name: str, n: int = 1) -> None:
        pass


NO_PROGRESS: Progress = _Silent()
"""The default: counts nothing (the MCP tools, the hooks, library callers)."""


def format_seconds(seconds: float) -> str:
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
