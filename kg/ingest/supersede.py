"""An edited rule statement supersedes the one it replaces.

A directive's id comes from its text, so editing a statement retires the old node and asserts
a new one. :func:`link_edits` pairs them before the file's diff (:mod:`kg.ingest.pipeline`):
a new directive whose words overlap an old one of the same file by at least
:data:`MIN_OVERLAP` (Jaccard) gets ``supersedes`` in its properties and a SUPERSEDES edge to
the old id, so ``kg inspect`` and the log show what the rule used to say. The edge outlives
the old node (which is retired as before) and is carried over on every later ingest of the
file.
"""

from __future__ import annotations

import re
from dataclasses import replace

from kg.directives.model import DIRECTIVE
from kg.ingest.diff import ProjectedFile
from kg.parsed.model import ParsedDocument, ParsedEdge, ParsedNode

SUPERSEDES = "SUPERSEDES"
MIN_OVERLAP = 0.5
_WORD = re.compile(r"\w+")


def _words(text: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(text))


def link_edits(doc: ParsedDocument, projected: ProjectedFile) -> ParsedDocument:
    new_ids = {n.node_id for n in doc.nodes if n.node_type == DIRECTIVE}
    if not new_ids:
        return doc
    old = {
        node_id: _words(state.content)
        for node_id, state in projected.nodes.items()
        if state.node_type == DIRECTIVE and node_id not in new_ids
    }
    carried = [
        ParsedEdge(SUPERSEDES, from_node, to_node, {})
        for (edge_type, from_node, to_node) in projected.edges
        if edge_type == SUPERSEDES and from_node in new_ids
    ]
    pairs: dict[str, str] = {}
    if old:
        candidates = sorted(
            (
                -_jaccard(_words(n.content), words),
                n.node_id,
                old_id,
            )
            for n in doc.nodes
            if n.node_type == DIRECTIVE and n.node_id not in projected.nodes
            for old_id, words in old.items()
        )
        taken: set[str] = set()
        for negative, new_id, old_id in candidates:
            if -negative < MIN_OVERLAP:
                break
            if new_id not in pairs and old_id not in taken:
                pairs[new_id] = old_id
                taken.add(old_id)
    earlier = {
        node_id: state.properties["supersedes"]
        for node_id, state in projected.nodes.items()
        if node_id in new_ids and "supersedes" in state.properties
    }
    if not pairs and not carried and not earlier:
        return doc
    nodes: list[ParsedNode] = []
    for n in doc.nodes:
        supersedes = pairs.get(n.node_id) or earlier.get(n.node_id)
        if supersedes:
            n = replace(n, properties={**n.properties, "supersedes": supersedes})
        nodes.append(n)
    edges = [ParsedEdge(SUPERSEDES, new, old_id, {}) for new, old_id in pairs.items()]
    return replace(doc, nodes=tuple(nodes), edges=(*doc.edges, *carried, *edges))


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0
