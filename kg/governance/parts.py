"""What applying the policies uses of the runtime it is given (the runtime composes these).

Typed structurally, so that the governance services depend on these parts, not on
:mod:`kg.runtime`; ingestion's parts (:mod:`kg.ingest.parts`) include them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from kg.config import Scope, Settings
    from kg.events import EventStore
    from kg.read.as_of import AsOf
    from kg.read.reader import Reader


class PolicyParts(Protocol):
    @property
    def settings(self) -> Settings: ...

    @property
    def scope(self) -> Scope: ...

    @property
    def store(self) -> EventStore:
        """The event store on the application role (read-only when reading a kept replay)."""
        ...

    @property
    def as_of(self) -> AsOf | None:
        """Set when reading a kept replay: nothing may be written then."""
        ...

    def reader(self) -> Reader: ...

    async def catch_up(self) -> int: ...
