"""Spans and in-process gauges that kg's layers record without knowing who exports them.

Spans go through the OpenTelemetry API, once a tracer is installed with :func:`enable` (``kg mcp
--transport http --metrics`` installs the SDK's; the CLI never does). Until then a traced
function is called as it is, and OpenTelemetry is not even imported (~45 ms a ``kg sync`` from
a git hook would pay).
The embedder queue is a plain counter that the Prometheus endpoint reads when scraped.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, ParamSpec, TypeVar

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

P = ParamSpec("P")
T = TypeVar("T")

_tracer: Tracer | None = None
_embed_queue = 0


def enable(tracer: Tracer | None) -> None:
    """Record spans with ``tracer`` from now on (None: stop)."""
    global _tracer
    _tracer = tracer


def traced(name: str) -> Callable[[Callable[P, Awaitable[T]]], Callable[P, Awaitable[T]]]:
    """Run the decorated coroutine function in a span called ``name`` (exceptions recorded)."""

    def decorate(fn: Callable[P, Awaitable[T]]) -> Callable[P, Awaitable[T]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
            if _tracer is None:
                return await fn(*args, **kwargs)
            with _tracer.start_as_current_span(name):
                return await fn(*args, **kwargs)

        return wrapper

    return decorate


@contextlib.contextmanager
def span(name: str, **attributes: str | int) -> Iterator[None]:
    """``with span("mcp.tool", **{"mcp.tool.name": name}): ...`` (nothing when not enabled)."""
    if _tracer is None:
        yield
        return
    with _tracer.start_as_current_span(name, attributes=attributes):
        yield


def embeddings_queued(count: int) -> None:
    """``count`` texts wait for the embedder (negative: that many were embedded)."""
    global _embed_queue
    _embed_queue = max(0, _embed_queue + count)


def embed_queue() -> int:
    """Texts handed to the embedder and not yet embedded, in this process."""
    return _embed_queue
