"""Status lines contributed by the read side (projections, embeddings)."""

from __future__ import annotations

from kg.runtime import Runtime


async def print_extras(rt: Runtime) -> None:
    return None
