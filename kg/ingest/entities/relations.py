"""Relationship edges between entities, owned jointly by every file that states them.

``A **Charge** requires a **Customer**`` may be written in several files; the edge
``apiobject:charge -REQUIRES-> apiobject:customer`` exists while at least one of them still says
so. A file owns its sections' edges outright (:mod:`kg.ingest.diff`), but an edge between two
shared entity nodes belongs to no file, so it carries ``sources: ["path:line", ...]`` and this
ledger keeps the sources of every relationship edge a run has touched: re-ingesting a file
replaces that file's sources, and the edge is retracted when none are left.

The ledger is loaded lazily, per entity, from the graph (``kg.ingest.state.relation_edges``)
before the files that mention the entity are diffed, and carries the run's own changes from one
file to the next (several files of one transaction may state the same edge).
"""

from __future__ import annotations

from collections.abc import Iterable

from kg.events import EdgeAsserted, EdgeRetracted
from kg.events.base import DomainEvent
from kg.ingest.entities.extract import RELATIONS_KEY, source_order

EdgeKey = tuple[str, str, str]
Sources = dict[str, tuple[str, ...]]  # relpath -> its "path:line" sources


def _path_of(source: str) -> str:
    return source.rpartition(":")[0]


class RelationLedger:
    def __init__(self) -> None:
        self._edges: dict[EdgeKey, Sources] = {}
        self._loaded: set[str] = set()

    def missing(self, entity_ids: Iterable[str]) -> list[str]:
        """The entities whose outgoing relationship edges are not loaded yet."""
        return sorted(set(entity_ids) - self._loaded)

    def load(self, entity_ids: Iterable[str], rows: Iterable[tuple[EdgeKey, list[str]]]) -> None:
        self._loaded.update(entity_ids)
        for key, sources in rows:
            by_file: dict[str, list[str]] = {}
            for source in sources:
                by_file.setdefault(_path_of(source), []).append(source)
            self._edges.setdefault(
                key, {k: tuple(sorted(v, key=source_order)) for k, v in by_file.items()}
            )

    def claim(
        self, relpath: str, claims: dict[EdgeKey, tuple[str, ...]]
    ) -> tuple[list[DomainEvent], int, int]:
        """Replace ``relpath``'s statements with ``claims``; the events, and how many edges
        they assert and retract."""
        touched = sorted({k for k, v in self._edges.items() if relpath in v} | set(claims), key=str)
        events: list[DomainEvent] = []
        asserted = retracted = 0
        for key in touched:
            before = self._edges.get(key, {})
            after = {p: s for p, s in before.items() if p != relpath}
            if claims.get(key):
                after[relpath] = claims[key]
            if after == before:
                continue
            edge_type, from_node, to_node = key
            if after:
                self._edges[key] = after
                sources = sorted((s for group in after.values() for s in group), key=source_order)
                events.append(
                    EdgeAsserted(
                        edge_type=edge_type,
                        from_node=from_node,
                        to_node=to_node,
                        properties={RELATIONS_KEY: sources},
                    )
                )
                asserted += 1
            else:
                self._edges.pop(key, None)
                events.append(
                    EdgeRetracted(edge_type=edge_type, from_node=from_node, to_node=to_node)
                )
                retracted += 1
        return events, asserted, retracted
