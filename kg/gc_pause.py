"""Keeping Python's cyclic garbage collector out of bulk reads and replays.

Reading a log in bulk builds hundreds of thousands of small, acyclic objects (events, their
dicts, rows) that live until their batch is applied. The collector runs every 700 net
allocations and, as those survivors pile up, full collections that walk every object the
process holds (modules, pydantic schemas, the embedder's caches): measured, 30% of a read-all
and a fifth of a projection rebuild. Neither helper changes what is collected, only when.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No collection while a batch of acyclic objects is built (a batch of events from rows):
    nothing in it can become cyclic garbage, so a collection would only walk it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextmanager
def heap_frozen() -> Iterator[None]:
    """Everything the process holds now is left out of collections until the block ends
    (``gc.freeze``): a long replay's full collections then walk only what it allocated, not
    the modules and caches loaded before it. Objects are frozen, not leaked: they go back to
    the oldest generation afterwards."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def settle_long_lived() -> None:
    """Leave what the process holds now out of every later collection (``gc.freeze``), for a
    cache that lives until its source changes and was built after start-up froze the rest
    (:mod:`mcp_server.serve`): the directive catalogue is ~100k small objects at 5,000
    directives, and each full collection walking them took 50-95 ms of a tool call. Objects
    in it are still freed when nothing refers to them; only a reference cycle among what was
    alive at this moment is never collected, so call it for a rare event such as a reload."""
    gc.freeze()
