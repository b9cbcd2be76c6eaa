"""Appending to many streams in one transaction (bulk ingestion: one stream per source file).

A thin entry point kept for its callers: the implementation is :meth:`EventStore.append_many`,
the same core every append goes through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kg.config import Scope
from kg.events.envelope import AppendResult, EventMetadata
from kg.events.store import EventStore, StreamEvent

__all__ = ["StreamEvent", "append_multi"]


async def append_multi(
    store: EventStore,
    scope: Scope,
    items: Sequence[StreamEvent],
    *,
    expected_versions: Mapping[str, int] | None = None,
    metadata: EventMetadata | None = None,
) -> list[AppendResult]:
    """Append ``items`` atomically, in the given order: all of them or, on any error, none."""
    return await store.append_many(
        scope, items, expected_versions=expected_versions, metadata=metadata
    )
