"""Reading memory: ``read_graph``, ``search_nodes`` and ``open_nodes`` within a token budget.

The reference server returns its whole file (users report ``read_graph`` results of 50-80k
tokens). Here every read is ranked and cut to a token budget, and says what it cut:
``read_graph`` keeps the most connected entities, then the most recently changed;
``search_nodes`` the best matches (the whole name, in the name, the type, the observations,
then full-text rank); ``open_nodes`` the names in the order asked. An entity is kept whole or
not at all, except the first, whose observations are cut to fit rather than returning nothing.
Relations come with the entities they touch (``read_graph``: both ends kept), newest first.

Everything is read through :class:`kg.read.governed.Governed`: an entity a policy denies is
neither listed nor returned, nor named by a relation; only the count says it was there.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg.context.render import estimate_tokens
from kg.events.memory import ID_PREFIX, node_id
from kg.read.governed import Admitted
from kg.read.memory import RelationRow
from kg.read.reader import Snapshot
from kg.runtime import Runtime

READ_BUDGET = 4000
SEARCH_BUDGET = 2000
OPEN_BUDGET = 4000
#: matches a search ranks before the budget cuts (the rest are counted, not fetched)
SEARCH_CANDIDATES = 500


@dataclass
class Cut:
    """What the budget left out."""

    entities: int = 0
    relations: int = 0
    observations: int = 0

    def to_dict(self) -> dict[str, int]:
        return {
            "entities": self.entities,
            "relations": self.relations,
            "observations": self.observations,
        }


@dataclass
class MemoryGraph:
    """A read's result, in the reference's shape (``entities``, ``relations``) plus what was
    cut, what policies withheld, and the tokens it takes."""

    entities: list[dict[str, Any]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)
    cut: Cut = field(default_factory=Cut)
    excluded_by_policy: int = 0
    token_budget: int = 0
    token_estimate: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entities": self.entities,
            "relations": self.relations,
            "truncated": self.cut.to_dict(),
            "excludedByPolicy": self.excluded_by_policy,
            "tokenBudget": self.token_budget,
            "tokenEstimate": self.token_estimate,
        }

    def summary(self) -> str:
        """One line for the agent: what it got and what it did not."""
        cut = self.cut
        line = (
            f"{len(self.entities)} entities, {len(self.relations)} relations, "
            f"~{self.token_estimate} tokens"
        )
        if cut.entities or cut.relations or cut.observations:
            line += (
                f"; the token budget ({self.token_budget}) left out {cut.entities} entities, "
                f"{cut.relations} relations and {cut.observations} observations: pass a larger "
                "token_budget, or search_nodes / open_nodes for the ones you need"
            )
        if self.excluded_by_policy:
            line += f"; {self.excluded_by_policy} withheld by policy"
        return line


def _tokens(item: dict[str, Any]) -> int:
    return estimate_tokens(json.dumps(item, separators=(",", ":"), ensure_ascii=False)) + 1


def _name(node: str) -> str:
    return node.removeprefix(ID_PREFIX)


def _entity(a: Admitted) -> dict[str, Any]:
    shown = a.visible
    if shown.redacted:  # the id (so the name) stays visible; nothing else does
        return {"name": _name(a.node_id), "entityType": "", "observations": [], "redacted": True}
    observations = shown.properties.get("observations", [])
    return {
        "name": shown.name,
        "entityType": str(shown.properties.get("entity_type", "")),
        "observations": list(observations) if isinstance(observations, list) else [],
    }


def _relation(r: RelationRow) -> dict[str, str]:
    return {"from": _name(r.from_node), "to": _name(r.to_node), "relationType": r.relation_type}


#: ranked entities admitted (and loaded) at a time: a read stops loading once its budget is
#: full, so a 10,000-entity graph costs a page or two, not every row
PAGE = 50
RelationKey = tuple[str, str, str]


class _Fit:
    """Entities in rank order while they fit, each followed by its relations whose other end
    is admitted (and, with ``both_ends``, already kept)."""

    def __init__(self, budget: int, both_ends: bool) -> None:
        self.graph = MemoryGraph(token_budget=budget, token_estimate=2)
        self.both_ends = both_ends
        self.full = False
        self.kept: set[str] = set()
        self.shown: set[RelationKey] = set()
        self.visible: set[RelationKey] = set()  # relations the caller may see, met so far

    def add(self, a: Admitted, relations: list[RelationRow]) -> None:
        graph, budget = self.graph, self.graph.token_budget
        entity = _entity(a)
        cost = _tokens(entity)
        if self.full or (self.kept and graph.token_estimate + cost > budget):
            self.full = True
            graph.cut.entities += 1
            return
        if not self.kept:  # the first entity always comes, its observations cut to fit
            while entity["observations"] and graph.token_estimate + cost > budget:
                entity["observations"].pop()
                graph.cut.observations += 1
                cost = _tokens(entity)
        self.kept.add(a.node_id)
        graph.entities.append(entity)
        graph.token_estimate += cost
        for r in relations:
            key = (r.from_node, r.relation_type, r.to_node)
            if key in self.shown or (self.both_ends and not {r.from_node, r.to_node} <= self.kept):
                continue
            item = _relation(r)
            if graph.token_estimate + _tokens(item) > budget:
                continue
            self.shown.add(key)
            graph.relations.append(item)
            graph.token_estimate += _tokens(item)


Rank = Callable[[Snapshot], Awaitable[list[str]]]


async def _read(rt: Runtime, rank: Rank, budget: int, *, both_ends: bool) -> MemoryGraph:
    """Rank node ids, then admit them through the policies and fit them a page at a time,
    all in one snapshot; what the budget left unread is tallied, not loaded."""
    fit = _Fit(budget, both_ends)
    async with rt.reader().snapshot() as snap:
        ranked = await rank(snap)
        governed = await snap.governed()
        admitted: set[str] = set()
        done = 0
        while done < len(ranked) and not fit.full:
            page = ranked[done : done + PAGE]
            done += len(page)
            found = {a.node_id: a for a in await governed.nodes(page)}
            admitted.update(found)
            relations = await snap.memory.relations(list(found))
            ends = {n for r in relations for n in (r.from_node, r.to_node)} - admitted
            if ends and not both_ends:  # read_graph shows a relation only between kept ones
                admitted.update(a.node_id for a in await governed.nodes(sorted(ends)))
            by_node: dict[str, list[RelationRow]] = {}
            for r in relations:
                both_admitted = {r.from_node, r.to_node} <= admitted
                if both_admitted:  # one a later page may reach counts in relation_count
                    fit.visible.add((r.from_node, r.relation_type, r.to_node))
                if both_ends or both_admitted:
                    for end in dict.fromkeys((r.from_node, r.to_node)):
                        by_node.setdefault(end, []).append(r)
            for node in page:
                if node in found:
                    fit.add(found[node], by_node.get(node, []))
        rest = ranked[done:]
        graph = fit.graph
        graph.cut.relations = len(fit.visible - fit.shown)
        if rest:
            graph.cut.entities += len(await governed.admitted_subjects(rest))
            graph.cut.relations += await snap.memory.relation_count(rest)
        graph.excluded_by_policy = governed.excluded
    return graph


async def read_graph(rt: Runtime, token_budget: int = READ_BUDGET) -> MemoryGraph:
    """The graph, most connected entities first, within ``token_budget``."""

    async def rank(snap: Snapshot) -> list[str]:
        return [r.node_id for r in await snap.memory.ranked()]

    return await _read(rt, rank, token_budget, both_ends=True)


async def search_nodes(rt: Runtime, query: str, token_budget: int = SEARCH_BUDGET) -> MemoryGraph:
    """Entities matching ``query`` (a superset of the reference's matches), best first, and
    the relations touching them."""
    if not query.strip():
        return MemoryGraph(token_budget=token_budget)
    beyond = 0

    async def rank(snap: Snapshot) -> list[str]:
        nonlocal beyond
        hits, matches = await snap.memory.search(query, SEARCH_CANDIDATES)
        beyond = matches - len(hits)
        return [h.node_id for h in hits]

    graph = await _read(rt, rank, token_budget, both_ends=False)
    # Matches past the candidates are counted (policies aside), their relations are not.
    graph.cut.entities += beyond
    return graph


async def open_nodes(
    rt: Runtime, names: Sequence[str], token_budget: int = OPEN_BUDGET
) -> MemoryGraph:
    """The named entities (unknown names are left out, as in the reference) and the relations
    touching them."""
    ranked = list(dict.fromkeys(node_id(n) for n in names))

    async def rank(_: Snapshot) -> list[str]:
        return ranked

    return await _read(rt, rank, token_budget, both_ends=False)
