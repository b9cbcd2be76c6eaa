"""Keeping the garbage collector's full passes off a large ingest's long-lived objects.

CPython's collector traverses every tracked object of the oldest generation on each full pass,
and runs one whenever that generation has grown by a quarter. A 10,000-file ingest keeps
hundreds of thousands of objects alive for its whole run (texts, parse results, the drivers'
caches, the report), so the passes come again and again over an ever larger heap: 17 s of a
107 s run. Freezing what is alive after each chunk (``gc.freeze()``) moves it to the
permanent generation, which the passes skip; unfreezing at the end gives it back, so cyclic
garbage among those objects is still collected, only after the run.

A process that froze objects of its own (the MCP server freezes what start-up loaded) is left
alone: unfreezing would undo its choice, so an ingest there runs without this.
"""

from __future__ import annotations

import gc


class Tenure:
    """Freeze the survivors of each chunk of a large ingest; :meth:`release` when done."""

    def __init__(self) -> None:
        self._active = False

    def start(self, large: bool) -> None:
        """Begin, for a ``large`` ingest in a process where nothing is frozen yet."""
        self._active = large and gc.get_freeze_count() == 0

    def settle(self) -> None:
        """After a chunk: what is still alive stays until the end of the run."""
        if self._active:
            gc.freeze()

    def release(self) -> None:
        if self._active:
            gc.unfreeze()
            self._active = False
