"""Knowledge tools besides the context graph: search, neighbours, paths. All policy-checked.

Every node these return has passed ``kg.policies``: denied nodes are dropped and counted (and
never traversed), redacted nodes keep only their id and type.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

from kg.breadcrumbs import breadcrumb
from kg.context.staleness import STALE_FACTOR, stale_status
from kg.db.tenancy import tenant_transaction
from kg.embeddings.cache import query_vector
from kg.errors import NotFoundError, PolicyDeniedError, ValidationError
from kg.policies.evaluate import Governance
from kg.policies.model import REDACTED_NAME
from kg.projections.graph_reader import EdgeRow, GraphReader, NodeRow
from kg.ranking import content_factor, copy_of, prior
from kg.runtime import Runtime
from kg.search import FALLBACK_WARNING, MODES, search_in_transaction
from kg.validation import MAX_ID_CHARS, check_text, check_texts, clip

DIRECTIONS = ("out", "in", "both")
# get_node returns content up to this (a Markdown file's limit is 2 MB; a section is smaller).
MAX_NODE_CHARS = 200_000


@asynccontextmanager
async def governed_reader(rt: Runtime) -> AsyncIterator[tuple[GraphReader, Governance]]:
    """A reader on one snapshot of the projection, with the project's policies loaded."""
    async with tenant_transaction(
        rt.app_pool, rt.scope.tenant_id, isolation="repeatable_read", readonly=True
    ) as conn:
        reader = GraphReader(conn, rt.scope)
        yield reader, Governance({p.policy_id: p for p in await reader.policies()})


def node_view(row: NodeRow, redacted: bool, *, content_chars: int = 500) -> dict[str, Any]:
    if redacted:
        return {
            "node_id": row.node_id,
            "node_type": row.node_type,
            "name": REDACTED_NAME,
            "redacted": True,
        }
    content = (
        row.content if len(row.content) <= content_chars else row.content[:content_chars] + "…"
    )
    return {
        "node_id": row.node_id,
        "node_type": row.node_type,
        "name": row.name,
        "content": content,
        "labels": list(row.labels),
        "redacted": False,
    }


def edge_view(edge: EdgeRow) -> dict[str, Any]:
    return {
        "edge_type": edge.edge_type,
        "from_node": edge.from_node,
        "to_node": edge.to_node,
        "weight": edge.weight,
    }


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValidationError(f"{name} {value} is out of range: use {low} to {high}")


async def query_knowledge_graph(
    rt: Runtime, text: str, *, mode: str = "hybrid", node_types: Sequence[str] = (), limit: int = 10
) -> dict[str, Any]:
    if mode not in MODES:
        raise ValidationError(f"search mode {clip(mode)} is unknown: use one of {', '.join(MODES)}")
    check_text("text", text, 4000)
    check_texts("node_types", node_types)
    if not text.strip():
        raise ValidationError("search text is empty: give a few words to search for")
    _check_range("limit", limit, 1, 100)
    await rt.catch_up()
    vector = None if mode == "fulltext" else await query_vector(rt.embedder, text)
    async with governed_reader(rt) as (reader, gov):
        # One search for the whole text: searching each part of a multi-part question too
        # (as context builds do) lost 0.02 of top-5 recall here (bench/RESULTS.md).
        hits = await search_in_transaction(
            reader.conn, rt.scope, text, mode, list(node_types) or None, limit * 4, vector,
            max(limit * 8, 40),
        )  # fmt: skip
        rows = {r.node_id: r for r in await reader.nodes([h.node_id for h in hits])}
    # The context builder's ranking: copies, drafts and archives below the specs they copy,
    # stale nodes below their successors, and restatements of a better hit left out.
    ranked = sorted(
        ((h, rows[h.node_id]) for h in hits if h.node_id in rows),
        key=lambda hr: (-round(hr[0].score * search_prior(hr[1]), 12), hr[0].node_id),
    )
    results: list[dict[str, Any]] = []
    grams: list[tuple[str, frozenset[int]]] = []
    for hit, row in ranked:
        verdict = gov.admit(row.node_type, row.labels, row.governed_by)
        if verdict.denied:
            continue
        if not verdict.redacted:
            original, own = copy_of(row.content, grams)
            if original is not None:
                continue
            grams.append((row.node_id, own))
        if len(results) < limit:
            view = node_view(row, verdict.redacted)
            status = "" if verdict.redacted else stale_status(row)
            if status:
                view["status"] = status
            results.append(
                {
                    **view,
                    "score": round(hit.score * search_prior(row), 6),
                    "similarity": hit.similarity,
                }
            )
    return {
        "mode": mode,
        "results": results,
        "excluded_by_policy": gov.excluded_nodes,
        "embedder": rt.embedder.model_id if vector else None,
        "warnings": [FALLBACK_WARNING] if vector and rt.embedder.is_fallback else [],
    }


def search_prior(row: NodeRow) -> float:
    """What a search hit's score is multiplied by (see :mod:`kg.ranking`)."""
    stale = STALE_FACTOR if stale_status(row) else 1.0
    return prior(row.node_id) * content_factor(row.content) * stale


async def _start(reader: GraphReader, gov: Governance, node_id: str) -> NodeRow:
    rows = await reader.nodes([node_id])
    if not rows:
        raise NotFoundError(
            f"node {clip(node_id)} not found in this project: check the id "
            "(query_knowledge_graph finds nodes)"
        )
    verdict = gov.admit(rows[0].node_type, rows[0].labels, rows[0].governed_by)
    if verdict.denied:
        raise PolicyDeniedError(f"access to {clip(node_id)} is denied by policy")
    return rows[0]


async def get_node(rt: Runtime, node_id: str) -> dict[str, Any]:
    """One node in full, policy-checked: the whole content a context graph showed passages of,
    its properties and where it sits. Redacted: id and type only."""
    await rt.catch_up()
    async with governed_reader(rt) as (reader, gov):
        row = await _start(reader, gov, node_id)
    redacted = gov.verdict(row.node_type, row.labels, row.governed_by).redacted
    view = node_view(row, redacted, content_chars=MAX_NODE_CHARS)
    if not redacted:
        view["properties"] = row.properties
        view["breadcrumb"] = breadcrumb(row.node_id, row.name, row.properties)
        view["content_chars"] = len(row.content)
    return view


async def get_entity_neighbors(
    rt: Runtime,
    node_id: str,
    *,
    edge_types: Sequence[str] = (),
    depth: int = 1,
    direction: str = "both",
    limit: int = 100,
) -> dict[str, Any]:
    """Nodes within ``depth`` hops of ``node_id`` (one query per hop), with the edges between."""
    if direction not in DIRECTIONS:
        raise ValidationError(f"direction {clip(direction)} is unknown: use out, in or both")
    check_text("node_id", node_id, MAX_ID_CHARS)
    check_texts("edge_types", edge_types)
    _check_range("depth", depth, 1, 3)
    _check_range("limit", limit, 1, 500)
    await rt.catch_up()
    async with governed_reader(rt) as (reader, gov):
        start = await _start(reader, gov, node_id)
        reached: dict[str, tuple[NodeRow, bool, int]] = {}
        edges: list[EdgeRow] = []
        frontier, seen = [node_id], {node_id}
        for hop in range(1, depth + 1):
            if not frontier or len(reached) >= limit:
                break
            rows = await reader.neighbours(
                frontier,
                exclude=sorted(seen),
                edge_types=edge_types,
                node_types=(),
                limit=limit * 2,
                direction=direction,
            )
            frontier = []
            for edge, row in rows:
                if row.node_id in seen and row.node_id not in reached:
                    continue  # denied earlier
                if row.node_id not in reached:
                    seen.add(row.node_id)
                    verdict = gov.admit(row.node_type, row.labels, row.governed_by)
                    if verdict.denied or len(reached) >= limit:
                        continue
                    reached[row.node_id] = (row, verdict.redacted, hop)
                    frontier.append(row.node_id)
                edges.append(edge)
    start_view = node_view(
        start, gov.verdict(start.node_type, start.labels, start.governed_by).redacted
    )
    return {
        "node": start_view,
        "neighbors": [{**node_view(row, red), "hop": hop} for row, red, hop in reached.values()],
        "edges": [edge_view(e) for e in edges],
        "excluded_by_policy": gov.excluded_nodes,
        "truncated": len(reached) >= limit,
    }


async def find_path(rt: Runtime, source: str, target: str, *, max_depth: int = 4) -> dict[str, Any]:
    """Shortest path between two nodes over edges of any type, followed in either direction,
    never through a node a policy denies. Breadth-first, one query per hop."""
    _check_range("max_depth", max_depth, 1, 6)
    check_text("source", source, MAX_ID_CHARS)
    check_text("target", target, MAX_ID_CHARS)
    await rt.catch_up()
    async with governed_reader(rt) as (reader, gov):
        start = await _start(reader, gov, source)
        end = await _start(reader, gov, target)
        parents: dict[str, tuple[str, EdgeRow] | None] = {source: None}
        rows_by_id = {source: start, target: end}
        frontier = [source]
        for _ in range(max_depth):
            if target in parents or not frontier:
                break
            hops = await reader.neighbours(
                frontier, exclude=sorted(parents), edge_types=(), node_types=(), limit=20_000
            )
            frontier = []
            for edge, row in hops:
                if row.node_id in parents:
                    continue
                if gov.admit(row.node_type, row.labels, row.governed_by).denied:
                    parents[row.node_id] = None  # never expanded, never returned
                    continue
                parent = edge.from_node if edge.to_node == row.node_id else edge.to_node
                parents[row.node_id] = (parent, edge)
                rows_by_id[row.node_id] = row
                frontier.append(row.node_id)
    if target not in parents or (target != source and parents[target] is None):
        return {
            "source": source,
            "target": target,
            "found": False,
            "nodes": [],
            "edges": [],
            "max_depth": max_depth,
        }
    path_nodes, path_edges, current = [target], [], target
    while (step := parents[current]) is not None:
        current, edge = step
        path_nodes.append(current)
        path_edges.append(edge)
    path_nodes.reverse()
    path_edges.reverse()
    views = []
    for node_id in path_nodes:
        row = rows_by_id[node_id]
        views.append(
            node_view(row, gov.verdict(row.node_type, row.labels, row.governed_by).redacted)
        )
    return {
        "source": source,
        "target": target,
        "found": True,
        "length": len(path_edges),
        "nodes": views,
        "edges": [edge_view(e) for e in path_edges],
    }
