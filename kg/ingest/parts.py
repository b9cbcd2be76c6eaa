"""What ingestion uses of the runtime it is given: the store, the reader, the projection
runner, the embedder and the pools of one scope (:class:`kg.runtime.Runtime` composes them).

Typed structurally, so that ingestion depends on these parts and not on :mod:`kg.runtime`,
which sits below the application services and composes what they are given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from kg.governance.parts import PolicyParts

if TYPE_CHECKING:
    import asyncpg

    from kg.embeddings import EmbeddingProvider
    from kg.events.recent import RecentEvents
    from kg.projections import ProjectionRunner


class IngestParts(PolicyParts, Protocol):
    @property
    def url(self) -> str:
        """The database's URL (the sync state is kept per database and scope)."""
        ...

    @property
    def app_pool(self) -> asyncpg.Pool:
        """Connections on the restricted application role (row-level security on)."""
        ...

    @property
    def system_pool(self) -> asyncpg.Pool:
        """Connections across tenants, for the projections' bulk catch-up."""
        ...

    @property
    def runner(self) -> ProjectionRunner: ...

    @property
    def recent(self) -> RecentEvents:
        """This process's latest appends, which its runner projects without reading back."""
        ...

    @property
    def embedder(self) -> EmbeddingProvider: ...
