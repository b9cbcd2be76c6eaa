"""Fitting a context graph into its token budget: what each node shows and what it costs.

The budget bounds both forms an agent may read: the Markdown rendering and the structured
nodes and edges (as JSON). A node shows the passages of its content that match the task (see
:mod:`kg.passages`), under its heading path, within a per-node allowance that grows with
the budget; a node that no longer fits whole is shown shorter if a useful excerpt still fits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kg.breadcrumbs import breadcrumb, headings_above
from kg.context.render import edge_line, estimate_tokens, node_line
from kg.context.result import ContextEdge, ContextNode, edge_dict, node_dict
from kg.ingest.diff import SOURCE_KEY
from kg.passages import excerpt
from kg.policies.redaction import REDACTED
from kg.projections.graph_reader import NodeRow

# Tokens kept for the rendering's section titles and hint line, beyond its first line.
HEADER_TOKENS = 28
# A node's excerpt may take this share of the budget (in characters: tokens x 4 / share)...
EXCERPT_SHARE = 8
# ...but never less than this, and no excerpt shorter than MIN_EXCERPT is worth showing.
MIN_ALLOWANCE = 320
MIN_EXCERPT = 100
# Below this many tokens left, no node fits any more (a bare id, type and reason take ~20).
MIN_NODE_TOKENS = 24
# A shown score's precision: enough to order nodes, not six digits of noise per node.
SCORE_DIGITS = 3
# Properties a breadcrumb already says (file, ancestors, anchor), and the ingest's provenance
# (file digests an agent cannot use; ``get_node`` has it): left out of the shown node. The
# digests alone were ~45 of a section's ~110 JSON tokens, so fewer sections fit a budget.
_PLACE_KEYS = frozenset({"level", "anchor", "path"})
#: properties that name the file a node comes from
PATH_KEYS = ("path", "file_path", "file")


# The best LEAD_NODES of a build show the full allowance; each one after them a share of it,
# as a search engine shows a result: so a budget shows the passage that answers from more
# sections rather than more context around it from a few (half: +0.05 gold recall at 800
# tokens; a third, with shorter reasons: +0.05 more). One lead rather than two: +0.03 at 400
# tokens on three of six corpora and +0.03 at 800 on agents-beads, no corpus lower
# (bench/RESULTS.md issue 31, session 12); every node a snippet gained ~0.02 more, but the best
# match then shows only a sentence of its answer.
LEAD_NODES = 1
# ...and the nodes after them a snippet: this share of it (about a sentence at 800 tokens; a
# quarter rather than a third: one more node per build at 1,600 tokens, +0.03 gold recall on
# speckit-deacon there, bench/RESULTS.md issue 31).
SNIPPET_SHARE = 4
# Once this share of the budget is spent, and the candidates left would not all fit with their
# text, each further node is a pointer: its id, where it sits and why it is there, without text
# (``get_node`` reads it). A snippet node costs ~100 tokens of the structured result, most of
# them its id and fields rather than its sentence; a pointer about half: so the budget names
# more of the sections that answer, as a search engine lists more results than it quotes.
# Gold recall on the four real corpora, 400 / 800 / 1,600 tokens: mean +0.03 / +0.04 / +0.04,
# none lower; the team's corpora +0.04 / +0.01 / 0 (bench/RESULTS.md, issue 31 session 13).
POINTER_SHARE = 0.5
# The heading path a node after the lead shows is cut to this many characters: the document's
# title and the section's parent, what lies between elided (:func:`kg.breadcrumbs.shortened`).
CRUMB_CHARS = 60


def allowance(token_budget: int | None, max_content_chars: int, position: int = 0) -> int:
    """Characters of content the node at ``position`` (0 = best) of a build may show."""
    if token_budget is None:
        return max_content_chars
    chars = min(max_content_chars, max(MIN_ALLOWANCE, token_budget * 4 // EXCERPT_SHARE))
    return chars if position < LEAD_NODES else max(MIN_EXCERPT, chars // SNIPPET_SHARE)


def shown_node(
    row: NodeRow,
    *,
    redacted: bool,
    score: float,
    reason: str,
    hop: int,
    chars: int,
    query: Sequence[str],
    status: str = "",
    superseded_by: tuple[str, ...] = (),
    crumb_chars: int | None = None,
    pointer: bool = False,
) -> ContextNode:
    """The node as the agent sees it. Redacted: id and type only (no passage of it is ever
    read). Superseded: where it sits and what replaces it, no content. A pointer: where it
    sits, no content."""
    if redacted:
        shown = REDACTED  # the shape kg.policies.redaction decides
        return ContextNode(
            row.node_id, row.node_type, shown.name, shown.content, dict(shown.properties),
            shown.labels, round(score, SCORE_DIGITS), reason, hop, redacted=True,
        )  # fmt: skip
    section = bool(breadcrumb(row.node_id, row.name, row.properties))
    crumb = headings_above(row.node_id, row.properties, crumb_chars)
    hidden = _PLACE_KEYS | {SOURCE_KEY} if section else {SOURCE_KEY}
    properties: Mapping[str, Any] = {
        k: v
        for k, v in row.properties.items()
        if k not in hidden and not _said_already(k, v, row.node_id, row.name)
    }
    labels = row.labels if row.labels != (row.node_type,) else ()
    if status or pointer:
        text, partial = "", bool(row.content)
    else:
        cut = excerpt(row.content, query, chars)
        text, partial = cut.text, cut.partial
    return ContextNode(
        row.node_id,
        row.node_type,
        row.name,
        text,
        dict(properties),
        labels,
        round(score, SCORE_DIGITS),
        reason,
        hop,
        breadcrumb=crumb,
        partial=partial,
        status=status,
        superseded_by=superseded_by,
    )


def _said_already(key: str, value: Any, node_id: str, name: str) -> bool:
    """A property the shown node need not carry: empty (``[]``, ``""``, ``null``, ``false``: a
    rule's unset globs, layers, conditions...) or text its id or name already says (a
    function's path and symbol, a rule's file and ``file:line`` source). A directive's
    properties were ~175 JSON tokens, a function's ~55, for a ~30-token excerpt (issue 31);
    ``get_node`` returns them all. A file path stays unless the id says it: the MUSTs that
    govern a graph's files are found from its shown nodes (:func:`kg.directives.context.node_files`
    reads a path back from ``document:``, ``section:``, ``function:`` and ``class:`` ids)."""
    if value is None or value is False or value in ("", [], {}):
        return True
    if not isinstance(value, str):
        return False
    if key in PATH_KEYS:
        return value in node_id
    return value == name or value in node_id


def _json_tokens(data: Any) -> int:
    return estimate_tokens(json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str))


def node_cost(node: ContextNode) -> tuple[int, int]:
    """(rendering tokens, JSON tokens), each with one for the separator."""
    return estimate_tokens(node_line(node)) + 1, _json_tokens(node_dict(node)) + 1


def edge_cost(edge: ContextEdge) -> tuple[int, int]:
    return estimate_tokens(edge_line(edge)) + 1, _json_tokens(edge_dict(edge)) + 1


def structured_tokens(nodes: Sequence[ContextNode], edges: Sequence[ContextEdge]) -> int:
    return _json_tokens([[node_dict(n) for n in nodes], [edge_dict(e) for e in edges]])


@dataclass
class Meter:
    """Running totals of both forms against one budget (``None``: unbounded)."""

    budget: int | None
    text: int
    data: int = 2

    def room(self) -> int | None:
        if self.budget is None:
            return None
        return self.budget - max(self.text, self.data)

    def past(self, share: float) -> bool:
        """Whether ``share`` of the budget is spent (never, unbounded)."""
        return self.budget is not None and max(self.text, self.data) >= share * self.budget

    def crowded(self, cost: tuple[int, int], left: int, share: float) -> bool:
        """Whether the node costing ``cost`` should be a pointer: ``share`` of the budget is
        spent and the ``left`` candidates (it included) would not all fit at its cost. A build
        whose candidates all fit shows them all with their text."""
        room = self.room()
        return room is not None and self.past(share) and left * max(cost) > room

    def fits(self, cost: tuple[int, int]) -> bool:
        return self.budget is None or (
            self.text + cost[0] <= self.budget and self.data + cost[1] <= self.budget
        )

    def add(self, cost: tuple[int, int]) -> None:
        self.text += cost[0]
        self.data += cost[1]


def cannot_fit(row: NodeRow, reason: str, room: int | None, pointer: bool = False) -> bool:
    """True when not even the smallest form of a node that shows its text (its id, type, name
    and reason, and the shortest excerpt worth showing; a pointer: no excerpt) fits ``room``:
    decided before any excerpt is cut, so a build whose budget is spent does not cut excerpts
    for every remaining candidate. (Redacted and superseded nodes show other, shorter forms:
    not for them.)"""
    if room is None:
        return False
    text = 0 if pointer else min(len(row.content.strip()), MIN_EXCERPT)
    return estimate_tokens(row.node_id + row.node_type + row.name + reason) + text // 4 > room


def shrink_to_fit(
    node: ContextNode, row: NodeRow, meter: Meter, query: Sequence[str]
) -> ContextNode | None:
    """A shorter excerpt of ``node`` that fits what the budget has left, or ``None``."""
    room = meter.room()
    if room is None or node.redacted or node.status or not node.content:
        return None
    text_cost, data_cost = node_cost(node)
    overhead = max(text_cost, data_cost) - estimate_tokens(node.content)
    chars = (room - overhead) * 4 - 16
    if chars < MIN_EXCERPT:
        return None
    cut = excerpt(row.content, query, chars)
    smaller = replace(node, content=cut.text, partial=cut.partial)
    return smaller if meter.fits(node_cost(smaller)) else None
