"""The projected graph through the policies: the only way the read path hands out nodes.

A :class:`Governed` view belongs to one query (one tally of what the policies did). Each node
it reaches is decided once: a denied node is dropped and counted, never returned, never
traversed; every other node comes back as an :class:`Admitted`, whose views are shaped by
:func:`kg.policies.redaction.visible`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kg.errors import NotFoundError, PolicyDeniedError
from kg.policies.actions import Subject
from kg.policies.evaluate import Governance
from kg.policies.model import NodeVerdict
from kg.policies.redaction import Visible, visible
from kg.projections.graph_reader import EdgeRow, GraphReader, NodeRow
from kg.read.models import EdgeView, NodeView
from kg.read.names import resolve_all, resolve_known
from kg.search import SearchHit, search_in_transaction
from kg.validation import clip

#: Content characters a node view shows unless told otherwise.
VIEW_CHARS = 500


@dataclass(frozen=True)
class Admitted:
    """A node the policies let through, and how. ``row`` is for ranking and traversal; what
    is shown of the node comes from :attr:`visible` (or :meth:`view`)."""

    row: NodeRow
    verdict: NodeVerdict

    @property
    def node_id(self) -> str:
        return self.row.node_id

    @property
    def redacted(self) -> bool:
        return self.verdict.redacted

    @property
    def visible(self) -> Visible:
        return visible(self.row, self.verdict)

    def view(self, *, content_chars: int = VIEW_CHARS) -> NodeView:
        shown = self.visible
        content = shown.content
        if len(content) > content_chars:
            content = content[:content_chars] + "…"
        return NodeView(
            node_id=self.row.node_id,
            node_type=self.row.node_type,
            name=shown.name,
            content=content,
            labels=list(shown.labels),
            redacted=shown.redacted,
        )


def edge_view(edge: EdgeRow) -> EdgeView:
    return EdgeView(
        edge_type=edge.edge_type, from_node=edge.from_node, to_node=edge.to_node, weight=edge.weight
    )


class Governed:
    def __init__(self, graph: GraphReader, governance: Governance) -> None:
        self._graph = graph
        self.governance = governance
        self._decided: dict[str, NodeVerdict] = {}

    @property
    def excluded(self) -> int:
        """Distinct nodes a policy withheld from this query so far."""
        return self.governance.excluded_nodes

    def _admit(self, row: NodeRow) -> Admitted | None:
        verdict = self._decided.get(row.node_id)
        if verdict is None:
            verdict = self.governance.admit(row.node_type, row.labels, row.governed_by, row.node_id)
            self._decided[row.node_id] = verdict
        return None if verdict.denied else Admitted(row, verdict)

    async def census(
        self, node_type: str | None, limit: int
    ) -> tuple[dict[str, int], list[Admitted]]:
        """How many nodes of each type pass the policies (denied ones are counted as
        excluded), and the first ``limit`` of ``node_type`` by id (``kg nodes``)."""
        counts: dict[str, int] = {}
        chosen: list[str] = []
        for s in await self.every_subject():
            if node_type is not None and s.node_type != node_type:
                continue
            verdict = self.governance.admit(s.node_type, s.labels, s.governed_by, s.node_id)
            self._decided[s.node_id] = verdict
            if verdict.denied:
                continue
            counts[s.node_type] = counts.get(s.node_type, 0) + 1
            if node_type is not None and len(chosen) < limit:
                chosen.append(s.node_id)
        return counts, await self.nodes(chosen)

    async def admitted_subjects(self, node_ids: Sequence[str]) -> list[Subject]:
        """Those of ``node_ids`` that exist and pass the policies, as the policies see them
        (id, type, labels), each decided (a denied one counted as excluded) without loading
        names or content: what a result cut short by its budget reports it left out, what a
        change notification may name."""
        passed = []
        for row in await self._graph.subjects_of(node_ids):
            s = Subject(*row)
            verdict = self._decided.get(s.node_id)
            if verdict is None:
                verdict = self.governance.admit(s.node_type, s.labels, s.governed_by, s.node_id)
                self._decided[s.node_id] = verdict
            if not verdict.denied:
                passed.append(s)
        return passed

    async def subjects(self, node_ids: Sequence[str]) -> list[Subject]:
        """What the policies see of these nodes (id, type, labels, governing policies), for
        the action guard and explanations: no name, no content, nothing decided or counted."""
        rows = await self._graph.nodes(node_ids) if node_ids else []
        return [Subject(r.node_id, r.node_type, r.labels, r.governed_by) for r in rows]

    async def every_subject(self) -> list[Subject]:
        """:meth:`subjects` of every node of the project, by id (``kg policy test``)."""
        return [Subject(*row) for row in await self._graph.policy_subjects()]

    async def nodes(self, node_ids: Sequence[str]) -> list[Admitted]:
        """Those of ``node_ids`` that exist and that no policy denies."""
        found = [self._admit(row) for row in await self._graph.nodes(node_ids)]
        return [a for a in found if a is not None]

    async def resolve(self, refs: Sequence[str]) -> list[str]:
        """Node ids for references that are ids or extracted entities' names (``Charge``);
        a reference naming nothing comes back as it is (see :mod:`kg.read.names`)."""
        return await resolve_all(self._graph, self.governance, refs)

    async def resolve_known(self, refs: Sequence[str], what: str = "node") -> list[str]:
        """:meth:`resolve`, with the one typed error (:class:`kg.read.names.UnknownNodeError`)
        for references that name nothing."""
        return await resolve_known(self._graph, self.governance, refs, what)

    async def start(self, ref: str) -> Admitted:
        """The node a query starts from (any name :mod:`kg.read.names` reads): a typed error
        when it is missing, denied, or a name several entities share."""
        rows = await self._graph.nodes([ref])  # an id (the usual case): one query, not two
        if not rows:
            node_id = (await self.resolve_known([ref]))[0]
            rows = await self._graph.nodes([node_id])
        if not rows:  # gone since it was resolved
            raise NotFoundError(f"node {clip(ref)} not found in this project")
        admitted = self._admit(rows[0])
        if admitted is None:
            raise PolicyDeniedError(f"access to {clip(rows[0].node_id)} is denied by policy")
        return admitted

    async def neighbours(
        self,
        frontier: Sequence[str],
        *,
        exclude: Sequence[str],
        edge_types: Sequence[str] = (),
        node_types: Sequence[str] = (),
        limit: int,
        direction: str = "both",
    ) -> list[tuple[EdgeRow, Admitted]]:
        """Edges touching the frontier with the admitted node at their other end, strongest
        first (an edge to a denied node is not returned)."""
        rows = await self._graph.neighbours(
            frontier,
            exclude=exclude,
            edge_types=edge_types,
            node_types=node_types,
            limit=limit,
            direction=direction,
        )
        out = []
        for edge, row in rows:
            admitted = self._admit(row)
            if admitted is not None:
                out.append((edge, admitted))
        return out

    @property
    def withheld(self) -> set[str]:
        """Ids this query found denied: a traversal excludes them from its next hops."""
        return {node_id for node_id, v in self._decided.items() if v.denied}

    async def search(
        self,
        text: str,
        mode: str,
        node_types: Sequence[str],
        *,
        limit: int,
        vector: str | None,
        candidates: int,
    ) -> list[tuple[SearchHit, Admitted]]:
        """Search hits (best first) with their admitted nodes; denied hits are dropped."""
        hits = await search_in_transaction(
            self._graph.conn, self._graph.scope, text, mode, list(node_types) or None, limit,
            vector, candidates,
        )  # fmt: skip
        admitted = {a.node_id: a for a in await self.nodes([h.node_id for h in hits])}
        return [(h, admitted[h.node_id]) for h in hits if h.node_id in admitted]
