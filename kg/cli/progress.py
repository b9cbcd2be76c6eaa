"""Progress on the terminal for long commands: rich bars on a terminal, plain lines otherwise.

Progress goes to stderr (the summary and any machine-readable output stay on stdout), and
the choice is made on stderr too: a bar is drawn only where it is seen. Nothing is shown for
a command that ends within :data:`QUIET_SECONDS` (a one-file sync stays silent, and rich is
not even imported); after that, a terminal gets a live display and a pipe or a log file a
plain line every :data:`PLAIN_EVERY` seconds (``KG_PROGRESS_SECONDS`` sets both; ``0``
shows every change, for tests), and a last line when the command ends.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from kg.progress import Progress

QUIET_SECONDS = 1.0
PLAIN_EVERY = 5.0
SECONDS_ENV = "KG_PROGRESS_SECONDS"


class TerminalProgress(Progress):
    """Renders the counts on ``stream``: rich when it is a terminal, else plain lines."""

    def __init__(self, stream: IO[str] | None = None, *, label: str = "") -> None:
        super().__init__()
        self.stream = stream if stream is not None else sys.stderr
        self.label = label
        configured = os.environ.get(SECONDS_ENV)
        every = float(configured) if configured else None
        self.quiet = QUIET_SECONDS if every is None else every
        self.every = PLAIN_EVERY if every is None else every
        self.rich = _is_terminal(self.stream) and os.environ.get("TERM") != "dumb"
        self._last = 0.0
        self._shown = False
        self._live: Any = None
        self._tasks: dict[str, Any] = {}

    def changed(self) -> None:
        now = time.monotonic()
        if now - self.started < self.quiet:
            return
        if self.rich:
            self._render_rich()
        elif not self._shown or now - self._last >= self.every:
            self._print_line(now)

    def _print_line(self, now: float) -> None:
        prefix = f"{self.label}: " if self.label else ""
        print(f"{prefix}{self.line(now)}", file=self.stream, flush=True)
        self._last = now
        self._shown = True

    def _render_rich(self) -> None:
        if self._live is None:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._live = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(file=self.stream),
                transient=False,
            )
            self._live.start()
            self._shown = True
        now = time.monotonic()
        for name, counter in self.counters.items():
            task = self._tasks.get(name)
            rate = counter.rate(now)
            fields = {"rate": f"{rate:,.1f}/s" if rate else ""}
            if task is None:
                described = f"{self.label} {name}".strip()
                self._tasks[name] = self._live.add_task(
                    described, total=counter.total, completed=counter.value, **fields
                )
            else:
                self._live.update(task, total=counter.total, completed=counter.value, **fields)

    def close(self) -> None:
        if self._live is not None:
            self._render_rich()
            self._live.stop()
            self._live = None
        elif self._shown:
            self._print_line(time.monotonic())


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@contextmanager
def shown(label: str = "") -> Iterator[TerminalProgress]:
    """A :class:`TerminalProgress` on stderr, closed (last line printed) when the block ends."""
    progress = TerminalProgress(label=label)
    try:
        yield progress
    finally:
        progress.close()
