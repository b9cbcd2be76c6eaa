"""Knowledge tools besides the context graph: search, neighbours, paths. All policy-checked.

Each reads one snapshot of the read model (``rt.reader()``) through its policy-checked view
(:class:`kg.read.governed.Governed`): denied nodes are dropped and counted (and never
traversed), redacted nodes keep only their id and type. Results are the typed models of
:mod:`kg.read.models`, which are the MCP tools' output schemas too.
"""

from __future__ import annotations

from collections.abc import Sequence

from kg.breadcrumbs import breadcrumb
from kg.context.staleness import STALE_FACTOR, stale_status
from kg.errors import ValidationError
from kg.projections.browse_reader import BrowseReader
from kg.projections.graph_reader import EdgeRow, NodeRow
from kg.ranking import content_factor, copy_of, prior
from kg.read.governed import Admitted, edge_view
from kg.read.models import (
    GraphPath,
    Neighbour,
    Neighbourhood,
    NodeDetail,
    NodeListing,
    OutlineEntry,
    SearchHit,
    SearchResults,
)
from kg.read.task_vector import task_vectors
from kg.runtime import Runtime
from kg.search import FALLBACK_WARNING, MODES
from kg.validation import MAX_ID_CHARS, check_text, check_texts, clip

DIRECTIONS = ("out", "in", "both")
# get_node returns content up to this (a Markdown file's limit is 2 MB; a section is smaller).
MAX_NODE_CHARS = 200_000
#: a document's outline in get_node lists at most this many sections
MAX_OUTLINE = 100
DOCUMENT_PREFIX = "document:"
_OUTLINED = ("section:", "class:", "function:")  # what a document's outline lists


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if not low <= value <= high:
        raise ValidationError(f"{name} {value} is out of range: use {low} to {high}")


async def query_knowledge_graph(
    rt: Runtime, text: str, *, mode: str = "hybrid", node_types: Sequence[str] = (), limit: int = 10
) -> SearchResults:
    if mode not in MODES:
        raise ValidationError(f"search mode {clip(mode)} is unknown: use one of {', '.join(MODES)}")
    check_text("text", text, 4000)
    check_texts("node_types", node_types)
    if not text.strip():
        raise ValidationError("search text is empty: give a few words to search for")
    _check_range("limit", limit, 1, 100)
    async with rt.reader().snapshot() as snap:
        vector: str | None = None
        warnings: list[str] = []
        if mode != "fulltext":
            # Full text when the embedder is unavailable or not the index's model (warned).
            state = await snap.embedding_state()
            vectors, warnings = await task_vectors(rt.embedder, state, [text])
            vector = None if vectors is None else vectors[0]
        searched = mode if vector is not None else "fulltext"
        governed = await snap.governed()
        # One search for the whole text: searching each part of a multi-part question too
        # (as context builds do) lost 0.02 of top-5 recall here (bench/RESULTS.md).
        hits = await governed.search(
            text,
            searched,
            node_types,
            limit=limit * 4,
            vector=vector,
            candidates=max(limit * 8, 40),
        )
        read_state = await snap.state()
    lag = read_state.warning()
    if lag is not None:
        warnings.append(lag)
    # The context builder's ranking: copies, drafts and archives below the specs they copy,
    # stale nodes below their successors, and restatements of a better hit left out.
    ranked = sorted(
        hits, key=lambda ha: (-round(ha[0].score * search_prior(ha[1].row), 12), ha[0].node_id)
    )
    results: list[SearchHit] = []
    grams: list[tuple[str, frozenset[int]]] = []
    for hit, node in ranked:
        if len(results) >= limit:
            break  # the hits past the limit are not shown: comparing them was wasted work
        if not node.redacted:
            original, own = copy_of(node.row.content, grams)
            if original is not None:
                continue
            grams.append((node.node_id, own))
        view = node.view()
        results.append(
            SearchHit(
                **view.model_dump(),
                status="" if node.redacted else stale_status(node.row),
                score=round(hit.score * search_prior(node.row), 6),
                similarity=hit.similarity,
            )
        )
    if vector and rt.embedder.is_fallback:
        warnings.append(FALLBACK_WARNING)
    return SearchResults(
        mode=searched,
        results=results,
        excluded_by_policy=governed.excluded,
        embedder=rt.embedder.model_id if vector else None,
        warnings=warnings,
        projected_to=read_state.projected_to,
        behind=read_state.behind,
    )


def search_prior(row: NodeRow) -> float:
    """What a search hit's score is multiplied by (see :mod:`kg.ranking`)."""
    stale = STALE_FACTOR if stale_status(row) else 1.0
    return prior(row.node_id) * content_factor(row.content) * stale


async def get_node(rt: Runtime, node_id: str) -> NodeDetail:
    """One node in full, policy-checked: the whole content a context graph showed passages of,
    its properties and where it sits; a document's outline (its sections' headings and ids, at
    most :data:`MAX_OUTLINE`), since its own content is only what precedes its first heading.
    Redacted: id and type only."""
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        node = await governed.start(node_id)
        outline: list[Admitted] = []
        more = False
        if node.node_id.startswith(DOCUMENT_PREFIX) and not node.redacted:
            parts = await BrowseReader(snap.conn, snap.scope).contained(
                node.node_id, MAX_OUTLINE + 1
            )
            wanted = [r.node_id for r in parts if r.node_id.startswith(_OUTLINED)]
            more = len(parts) > MAX_OUTLINE
            admitted = {a.node_id: a for a in await governed.nodes(wanted[:MAX_OUTLINE])}
            outline = [admitted[i] for i in wanted[:MAX_OUTLINE] if i in admitted]
    view = node.view(content_chars=MAX_NODE_CHARS)
    if node.redacted:
        return NodeDetail(**view.model_dump())
    shown = node.visible
    return NodeDetail(
        **view.model_dump(),
        properties=dict(shown.properties),
        breadcrumb=breadcrumb(node.node_id, shown.name, dict(shown.properties)),
        content_chars=len(shown.content),
        outline=[_outline_entry(a) for a in outline],
        outline_truncated=more,
        excluded_by_policy=governed.excluded,
    )


def _outline_entry(node: Admitted) -> OutlineEntry:
    shown = node.visible
    level = shown.properties.get("level") if not node.redacted else None
    return OutlineEntry(
        node_id=node.node_id, name=shown.name, level=level if isinstance(level, int) else 0
    )


async def get_entity_neighbors(
    rt: Runtime,
    node_id: str,
    *,
    edge_types: Sequence[str] = (),
    depth: int = 1,
    direction: str = "both",
    limit: int = 100,
) -> Neighbourhood:
    """Nodes within ``depth`` hops of ``node_id`` (any name :mod:`kg.read.names` reads; one
    query per hop), with the edges between."""
    if direction not in DIRECTIONS:
        raise ValidationError(f"direction {clip(direction)} is unknown: use out, in or both")
    check_text("node_id", node_id, MAX_ID_CHARS)
    check_texts("edge_types", edge_types)
    _check_range("depth", depth, 1, 3)
    _check_range("limit", limit, 1, 500)
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        start = await governed.start(node_id)
        node_id = start.node_id  # a name given becomes its id
        reached: dict[str, tuple[Admitted, int]] = {}
        edges: list[EdgeRow] = []
        frontier, seen = [node_id], {node_id}
        for hop in range(1, depth + 1):
            if not frontier or len(reached) >= limit:
                break
            rows = await governed.neighbours(
                frontier,
                exclude=sorted(seen | governed.withheld),
                edge_types=edge_types,
                limit=limit * 2,
                direction=direction,
            )
            frontier = []
            for edge, node in rows:
                if node.node_id in seen and node.node_id not in reached:
                    continue  # left out by the limit
                if node.node_id not in reached:
                    seen.add(node.node_id)
                    if len(reached) >= limit:
                        continue
                    reached[node.node_id] = (node, hop)
                    frontier.append(node.node_id)
                edges.append(edge)
    return Neighbourhood(
        node=start.view(),
        neighbors=[Neighbour(**n.view().model_dump(), hop=hop) for n, hop in reached.values()],
        edges=[edge_view(e) for e in edges],
        excluded_by_policy=governed.excluded,
        truncated=len(reached) >= limit,
    )


async def find_path(rt: Runtime, source: str, target: str, *, max_depth: int = 4) -> GraphPath:
    """Shortest path between two nodes over edges of any type, followed in either direction,
    never through a node a policy denies. Breadth-first, one query per hop. ``source`` and
    ``target`` are node ids or entity names."""
    _check_range("max_depth", max_depth, 1, 6)
    check_text("source", source, MAX_ID_CHARS)
    check_text("target", target, MAX_ID_CHARS)
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        start = await governed.start(source)
        end = await governed.start(target)
        source, target = start.node_id, end.node_id  # a name given becomes its id
        parents: dict[str, tuple[str, EdgeRow] | None] = {source: None}
        nodes = {source: start, target: end}
        frontier = [source]
        for _ in range(max_depth):
            if target in parents or not frontier:
                break
            hops = await governed.neighbours(
                frontier, exclude=sorted(set(parents) | governed.withheld), limit=20_000
            )
            frontier = []
            for edge, node in hops:
                if node.node_id in parents:
                    continue
                parent = edge.from_node if edge.to_node == node.node_id else edge.to_node
                parents[node.node_id] = (parent, edge)
                nodes[node.node_id] = node
                frontier.append(node.node_id)
    if target not in parents or (target != source and parents[target] is None):
        return GraphPath(
            source=source, target=target, found=False, nodes=[], edges=[], max_depth=max_depth
        )
    path_nodes, path_edges, current = [target], [], target
    while (step := parents[current]) is not None:
        current, edge = step
        path_nodes.append(current)
        path_edges.append(edge)
    path_nodes.reverse()
    path_edges.reverse()
    return GraphPath(
        source=source,
        target=target,
        found=True,
        length=len(path_edges),
        nodes=[nodes[n].view() for n in path_nodes],
        edges=[edge_view(e) for e in path_edges],
    )


async def list_nodes(rt: Runtime, node_type: str | None = None, limit: int = 50) -> NodeListing:
    """The project's node types with how many nodes of each the caller may see, or (with
    ``node_type``) the first ``limit`` nodes of that type by id. Policy-checked: denied nodes
    are only counted (``excluded_by_policy``), redacted ones show their id and type only."""
    if node_type is not None:
        check_text("node_type", node_type, MAX_ID_CHARS)
    _check_range("limit", limit, 1, 1000)
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        counts, chosen = await governed.census(node_type, limit)
    return NodeListing(
        types=dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        nodes=[n.view() for n in chosen],
        excluded_by_policy=governed.excluded,
    )
