"""What a projection is, and the run-splitting that lets it write batches in bulk correctly."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

import asyncpg
import orjson

from kg.embeddings.base import EmbeddingProvider
from kg.embeddings.cache import IndexModelMismatch
from kg.errors import EmbeddingError
from kg.events.envelope import RecordedEvent
from kg.progress import NO_PROGRESS, TEXTS_EMBEDDED, Progress

EMBEDDER_RETRY_SECONDS = 30.0
"""After the embedder failed, how long projections of this process project without trying it
again (a long-lived MCP server retries after that; each command is a process of its own)."""


@dataclass
class ProjectionContext:
    """What projections may use besides the connection. ``embedded`` counts texts actually
    sent to the provider (cache misses), for status and tests; ``progress`` is where a long
    command's display counts them (and the events projected).

    ``embedding_problem`` says why the embedder could not be used (unavailable, or not the
    model the index holds): nodes were then projected without their vectors, to be embedded
    later (:mod:`kg.projections.embedding_backlog`). An outage degrades, it never blocks.
    ``defer_embedding`` makes every projection do that on purpose (cached vectors are still
    taken): a large ingest makes the graph usable first and embeds after."""

    embedder: EmbeddingProvider
    embedded: int = 0
    progress: Progress = NO_PROGRESS
    embedding_problem: str | None = None
    #: project nodes without embedding what the cache lacks: they wait, to be embedded after
    #: the graph is usable (``kg ingest``'s graph first, vectors after; issue 34)
    defer_embedding: bool = False
    _retry_at: float = 0.0

    def note_embedded(self, n: int) -> None:
        self.embedded += n
        self.progress.add(TEXTS_EMBEDDED, n)

    def embedder_resting(self) -> bool:
        """Whether the embedder failed a moment ago (then it is not asked again yet)."""
        return self.embedding_problem is not None and time.monotonic() < self._retry_at

    def note_unavailable(self, error: EmbeddingError) -> None:
        """Remember why the embedder could not be used; an outage (not a model that differs
        from the index's, which costs nothing to find again) rests it a while."""
        self.embedding_problem = str(error)
        if not isinstance(error, IndexModelMismatch):
            self._retry_at = time.monotonic() + EMBEDDER_RETRY_SECONDS

    def note_available(self) -> None:
        self.embedding_problem = None
        self._retry_at = 0.0


class Projection(Protocol):
    """A read model built from the log. ``apply`` runs inside the runner's transaction, which
    also moves the checkpoint: rows and checkpoint commit together or not at all."""

    name: str

    async def apply(
        self, conn: asyncpg.Connection, events: Sequence[RecordedEvent], ctx: ProjectionContext
    ) -> None: ...

    async def reset(self, conn: asyncpg.Connection) -> None:
        """Empty the projection's tables, for a rebuild (may drop indexes that are cheaper to
        build in bulk afterwards)."""
        ...

    async def prepare_bulk(self, conn: asyncpg.Connection) -> None:
        """Drop indexes that are cheaper to build once than to maintain row by row, before a
        long catch-up; ``finish_rebuild`` restores them."""
        ...

    async def finish_rebuild(self, conn: asyncpg.Connection) -> None:
        """Restore whatever ``reset`` dropped, once the replay is done."""
        ...


T = TypeVar("T")


def _iso(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_rows(rows: list[dict[str, Any]]) -> str:
    """A batch of rows as one JSON document, for ``json_to_recordset($1::json)``.

    One text parameter instead of a dozen arrays: asyncpg encodes an array parameter element
    by element (with two ``isinstance`` checks against ``collections.abc`` each), which was a
    fifth of a rebuild's Python time; orjson writes the whole batch in one call. Timestamps go
    as ISO 8601 with their offset and microseconds (PostgreSQL reads them back exactly); what
    orjson refuses (integers beyond 64 bits in properties) goes through the standard library.
    """
    try:
        return orjson.dumps(rows).decode()
    except TypeError:
        return json.dumps(rows, default=_iso)


def runs(items: Sequence[T], kind: Callable[[T], str]) -> Iterator[tuple[str, list[T]]]:
    """Split ``items`` into maximal runs of the same kind, in order.

    Bulk statements may reorder work inside a run (an upsert run is one INSERT) but never across
    runs, so "assert, retire, assert again" in one batch keeps its meaning.
    """
    current: list[T] = []
    current_kind = ""
    for item in items:
        k = kind(item)
        if current and k != current_kind:
            yield current_kind, current
            current = []
        current_kind = k
        current.append(item)
    if current:
        yield current_kind, current


async def drop_indexes(conn: asyncpg.Connection, names: Iterable[str]) -> None:
    """``DROP INDEX IF EXISTS`` of each of ``names``, one statement each: Citus drops an index
    of a distributed table on every shard and refuses several distributed objects in one
    command."""
    for name in names:
        await conn.execute(f"DROP INDEX IF EXISTS {name}")
