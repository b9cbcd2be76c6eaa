"""Reading what the graph holds for a set of files, in a few batched queries.

Every function takes many files at once so that re-ingesting 10,000 unchanged files costs a
handful of round trips (primary-key lookups with ``= ANY($ids)``), not one query per file.
Reads run on the application role inside a transaction scoped to the tenant (row-level
security) and filter on the project explicitly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from kg.config import Scope
from kg.ingest.diff import SOURCE_KEY, EdgeState, NodeState, ProjectedFile
from kg.ingest.requirements import split_id
from kg.parsed.model import CONTAINS, DEFINES, DOCUMENT, REFERENCES, REQUIREMENT
from kg.read.reader import Reader

_CHUNK = 5000


@asynccontextmanager
async def scoped(pool: asyncpg.Pool, scope: Scope) -> AsyncIterator[asyncpg.Connection]:
    """A read-only transaction on one snapshot, scoped to the tenant: the read model's own
    snapshot (:meth:`kg.read.reader.Reader.snapshot`), without its catch-up (ingestion
    compares against the projection as it is, and catches up where it needs to)."""
    async with Reader(pool, scope).snapshot(catch_up=False) as snap:
        yield snap.conn


def _chunks(items: Sequence[str]) -> list[list[str]]:
    return [list(items[i : i + _CHUNK]) for i in range(0, len(items), _CHUNK)]


async def fingerprints(
    conn: asyncpg.Connection, scope: Scope, doc_ids: Sequence[str]
) -> dict[str, str]:
    """``document id -> fingerprint`` for the documents the graph holds (``""`` when a
    document node exists but was not made by ingestion)."""
    found: dict[str, str] = {}
    for chunk in _chunks(doc_ids):
        rows = await conn.fetch(
            "SELECT node_id, properties -> $4::text ->> 'fingerprint' AS fp FROM kg_nodes "
            "WHERE tenant_id = $1 AND project_id = $2 AND node_id = ANY($3::text[])",
            scope.tenant_id,
            scope.project_id,
            chunk,
            SOURCE_KEY,
        )
        found.update((r["node_id"], r["fp"] or "") for r in rows)
    return found


async def ingested_documents(conn: asyncpg.Connection, scope: Scope) -> list[str]:
    """Project-relative paths of every document node that ingestion made."""
    rows = await conn.fetch(
        "SELECT properties -> $3::text ->> 'path' AS path FROM kg_nodes "
        "WHERE tenant_id = $1 AND project_id = $2 AND labels @> ARRAY[$4]::text[] "
        "AND node_id LIKE 'document:%' AND properties ? $3::text",
        scope.tenant_id,
        scope.project_id,
        SOURCE_KEY,
        DOCUMENT,
    )
    return sorted(r["path"] for r in rows if r["path"])


async def projected_files(
    conn: asyncpg.Connection, scope: Scope, doc_ids: Sequence[str]
) -> dict[str, ProjectedFile]:
    """For each document id: its node, the sections (or, for a source file, the classes and
    functions; for a rule file, its directives) it CONTAINS, and the edges leaving them."""
    files: dict[str, ProjectedFile] = {doc: ProjectedFile() for doc in doc_ids}
    owner: dict[str, str] = {doc: doc for doc in doc_ids}
    parents = list(doc_ids)
    while parents:  # sections, or a source file's symbols and then their members
        classes: list[str] = []
        for chunk in _chunks(parents):
            rows = await conn.fetch(
                "SELECT from_node, to_node FROM kg_edges WHERE tenant_id = $1 "
                "AND project_id = $2 AND from_node = ANY($3::text[]) AND edge_type = $4 "
                "AND (to_node LIKE 'section:%' OR to_node LIKE 'class:%' "
                "OR to_node LIKE 'function:%' OR to_node LIKE 'directive:%')",
                scope.tenant_id,
                scope.project_id,
                chunk,
                CONTAINS,
            )
            for r in rows:
                child = r["to_node"]
                if child not in owner:
                    owner[child] = owner[r["from_node"]]
                    if child.startswith("class:"):
                        classes.append(child)
        parents = classes
    ids = list(owner)
    for chunk in _chunks(ids):
        rows = await conn.fetch(
            "SELECT node_id, node_type, name, content, properties, labels FROM kg_nodes "
            "WHERE tenant_id = $1 AND project_id = $2 AND node_id = ANY($3::text[])",
            scope.tenant_id,
            scope.project_id,
            chunk,
        )
        for r in rows:
            files[owner[r["node_id"]]].nodes[r["node_id"]] = _node_state(r)
    for chunk in _chunks(ids):
        rows = await conn.fetch(
            "SELECT edge_type, from_node, to_node, properties, weight FROM kg_edges "
            "WHERE tenant_id = $1 AND project_id = $2 AND from_node = ANY($3::text[])",
            scope.tenant_id,
            scope.project_id,
            chunk,
        )
        for r in rows:
            key = (r["edge_type"], r["from_node"], r["to_node"])
            files[owner[r["from_node"]]].edges[key] = EdgeState(
                dict(r["properties"]), float(r["weight"])
            )
    return files


def _node_state(row: asyncpg.Record) -> NodeState:
    properties: dict[str, Any] = dict(row["properties"])
    return NodeState(
        row["node_type"], row["name"], row["content"], properties, tuple(row["labels"])
    )


async def existing_nodes(
    conn: asyncpg.Connection, scope: Scope, node_ids: Sequence[str]
) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(node_ids):
        rows = await conn.fetch(
            "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
            "AND node_id = ANY($3::text[])",
            scope.tenant_id,
            scope.project_id,
            chunk,
        )
        found.update(r["node_id"] for r in rows)
    return found


async def relation_edges(
    conn: asyncpg.Connection, scope: Scope, entity_ids: Sequence[str]
) -> list[tuple[tuple[str, str, str], list[str]]]:
    """Relationship edges leaving these entities, with the ``path:line`` sources stating them
    (see :mod:`kg.ingest.entities.relations`)."""
    found: list[tuple[tuple[str, str, str], list[str]]] = []
    for chunk in _chunks(entity_ids):
        rows = await conn.fetch(
            "SELECT edge_type, from_node, to_node, properties -> 'sources' AS sources "
            "FROM kg_edges WHERE tenant_id = $1 AND project_id = $2 "
            "AND from_node = ANY($3::text[]) AND properties ? 'sources'",
            scope.tenant_id,
            scope.project_id,
            chunk,
        )
        for r in rows:
            key = (r["edge_type"], r["from_node"], r["to_node"])
            found.append((key, [str(s) for s in r["sources"] or []]))
    return found


async def stream_heads(
    conn: asyncpg.Connection, scope: Scope, stream_ids: Sequence[str]
) -> dict[str, tuple[int, int]]:
    """``stream id -> (version, position of its last event)`` for streams that exist."""
    heads: dict[str, tuple[int, int]] = {}
    for chunk in _chunks(stream_ids):
        rows = await conn.fetch(
            "SELECT stream_id, max(stream_version) AS v, max(position) AS p FROM kg_events "
            "WHERE tenant_id = $1 AND project_id = $2 AND stream_id = ANY($3::text[]) "
            "GROUP BY stream_id",
            scope.tenant_id,
            scope.project_id,
            chunk,
        )
        heads.update((r["stream_id"], (r["v"], r["p"])) for r in rows)
    return heads


async def graph_position(conn: asyncpg.Connection, tenant_id: str) -> int:
    """The position in ``tenant_id``'s log up to which both graph projections are current."""
    value = await conn.fetchval(
        "SELECT min(position) FROM projection_checkpoints "
        "WHERE tenant_id = $1 AND name IN ('kg_nodes', 'kg_edges')",
        tenant_id,
    )
    return int(value or 0)


async def orphan_requirements(
    conn: asyncpg.Connection, scope: Scope, candidates: Sequence[str]
) -> list[str]:
    """Those candidate requirement nodes that ingestion created (their first event is in a
    ``doc:`` stream) and that no edge touches any more."""
    rows = await conn.fetch(
        """
        SELECT n.node_id FROM kg_nodes n
          JOIN kg_events ev ON ev.tenant_id = n.tenant_id AND ev.position = n.first_position
         WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = ANY($3::text[])
           AND ev.stream_id LIKE 'doc:%'
           AND NOT EXISTS (SELECT 1 FROM kg_edges e WHERE e.tenant_id = $1
                           AND e.project_id = $2 AND e.to_node = n.node_id)
           AND NOT EXISTS (SELECT 1 FROM kg_edges e WHERE e.tenant_id = $1
                           AND e.project_id = $2 AND e.from_node = n.node_id)
         ORDER BY n.node_id
        """,
        scope.tenant_id,
        scope.project_id,
        list(candidates),
    )
    return [r["node_id"] for r in rows]


async def log_mark(conn: asyncpg.Connection, scope: Scope) -> tuple[int, str] | None:
    """The position and hash of the tenant's last event (None: the tenant has none).

    The hash chains every event before it, so a database that still holds this event with
    this hash holds the same log up to it: what a sync recorded is still there.
    """
    row = await conn.fetchrow(
        "SELECT position, hash FROM kg_events WHERE tenant_id = $1 "
        "ORDER BY tenant_id, position DESC LIMIT 1",
        scope.tenant_id,
    )
    return None if row is None else (int(row["position"]), str(row["hash"]))


async def holds_mark(conn: asyncpg.Connection, scope: Scope, mark: tuple[int, str]) -> bool:
    """Whether the tenant's log still has the event ``mark`` names, with the same hash."""
    found = await conn.fetchval(
        "SELECT hash FROM kg_events WHERE tenant_id = $1 AND position = $2",
        scope.tenant_id,
        mark[0],
    )
    return bool(found == mark[1])


async def requirement_definitions(conn: asyncpg.Connection, scope: Scope) -> list[tuple[str, str]]:
    """``(defining file, canonical id)`` of every requirement a document defines (its
    DEFINES edge into ``requirement:{path}#{id}``; see :mod:`kg.ingest.requirements`)."""
    rows = await conn.fetch(
        "SELECT DISTINCT to_node FROM kg_edges WHERE tenant_id = $1 AND project_id = $2 "
        "AND edge_type = $3 AND to_node LIKE 'requirement:%#%'",
        scope.tenant_id,
        scope.project_id,
        DEFINES,
    )
    found = []
    for r in rows:
        path, canonical = split_id(r["to_node"])
        if path:
            found.append((path, canonical))
    return found


async def files_mentioning_requirements(
    conn: asyncpg.Connection, scope: Scope, canonicals: Sequence[str]
) -> list[str]:
    """Files with a REFERENCES edge to a requirement named any of ``canonicals`` (wherever
    it points): their mentions are resolved again when those ids' definitions come or go."""
    if not canonicals:
        return []
    rows = await conn.fetch(
        "SELECT DISTINCT e.from_node FROM kg_nodes n JOIN kg_edges e "
        "ON e.tenant_id = n.tenant_id AND e.project_id = n.project_id AND e.to_node = n.node_id "
        "WHERE n.tenant_id = $1 AND n.project_id = $2 AND n.node_type = $3 "
        "AND n.name = ANY($4::text[]) AND e.edge_type = $5",
        scope.tenant_id,
        scope.project_id,
        REQUIREMENT,
        list(canonicals),
        REFERENCES,
    )
    paths = set()
    for r in rows:
        kind, _, rest = r["from_node"].partition(":")
        if kind in ("section", "document"):
            paths.add(rest.partition("#")[0] if kind == "section" else rest)
    return sorted(paths)
