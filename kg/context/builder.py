"""The context-graph builder: anchors -> policy-checked breadth-first expansion -> budgeted graph.

Pure of SQL: it asks a :class:`GraphSource` for rows (one round trip per hop) and asks
``kg.policies`` what each node may be. A denied node is dropped the moment it is reached, so
nothing is ever expanded through it, and it leaves no trace but a count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from kg.context.fit import (
    CRUMB_CHARS,
    HEADER_TOKENS,
    LEAD_NODES,
    MIN_NODE_TOKENS,
    POINTER_SHARE,
    Meter,
    allowance,
    cannot_fit,
    edge_cost,
    node_cost,
    shown_node,
    shrink_to_fit,
    structured_tokens,
)
from kg.context.graph_hash import graph_hash
from kg.context.intent import intent_factor, task_intent
from kg.context.render import estimate_tokens, render
from kg.context.request import MAX_DEFAULT_K, ContextRequest
from kg.context.result import Budget, ContextEdge, ContextGraph, ContextNode, GovernanceSummary
from kg.context.scoring import HOP_DECAY, recency_factor, task_overlap, weight_factor
from kg.context.staleness import STALE_FACTOR, stale_status, successors
from kg.embeddings.base import EmbeddingProvider
from kg.errors import NotFoundError, ValidationError
from kg.parsed.model import PARENT_OF
from kg.passages import terms
from kg.policies.evaluate import Governance, selected_types
from kg.policies.model import NodeVerdict, Policy
from kg.projections.embedding_backlog import EmbeddingState
from kg.projections.graph_reader import EdgeRow, NodeRow
from kg.ranking import (
    NONCURRENT_FACTOR,
    content_factor,
    copies_among,
    copy_of,
    merge_parts,
    prior,
    question_parts,
    unstructured_factor,
)
from kg.read.task_vector import task_vectors
from kg.search import FALLBACK_WARNING

# Bump whenever the same request on the same log would return a different graph (expansion,
# scoring, budgets, hashing): a logged graph is only reproducible by the version that built it.
# 1: first release. 2: per-node fan-out cap per hop; edge budget, reach edges first.
# 3: node content cut to max_content_chars. 4: default token budget 800 bounding the
# structured result too; passages matching the task with a breadcrumb; superseded nodes marked;
# semantic matches ranked by their fused score, the full-text leg OR'ing the task's terms;
# copies and drafts below what they copy; multi-part questions searched part by part; hops
# weighted by the task terms they share. 5: semantic anchors fused from lists FUSION_DEPTH
# times deeper. 6: anchors per 66 tokens of budget (12 at 800), shorter excerpts past the
# first two nodes, content-less matches (a document's title) at half their score. 7: anchors per
# 50 tokens (16 at 800), a snippet (a third of the allowance, the sentence that matches) past
# the first two nodes, shorter reasons, breadcrumbs without the file and the node's own name,
# scores to 3 digits, hop absent when 0; a hop walks through an entity a section MENTIONS to the
# other sections naming it, without showing the entity. 8: a build of at least FAMILY_BUDGET
# tokens brings the small families (siblings) of its best matches; records of work (a story's
# task list, completion notes, change log), an installed agent method and files named as
# superseded or retired rank like copies (kg.ranking). 9: code or documents decided from the
# task's wording, the other kind at a lower score (kg.context.intent). 10: a node's type is not
# repeated when its id's prefix says it, so a budget fits about one more node (issue 31).
# 11: copies told apart from the data (a copy gives its rank to its original; no product's
# folder names), a heading-less long file ranked by its length in passages, "should / can I /
# is it OK" ask for documents, a shown node without empty properties or what its id says.
# 12: past half the budget, further matches are pointers (no text) when the rest would not fit
# with their text; heading paths after the lead cut to 60 characters.
BUILDER_VERSION = 12

# Each frontier node offers at least this many of its strongest edges per hop (more when the
# frontier is small), so no single hub (a policy governing thousands of nodes, a document with
# hundreds of sections) fills a hop on its own.
MIN_FANOUT = 16

# Each search (the task's and each part's) fuses FUSION_DEPTH times the anchors wanted, so
# its full-text and vector candidate lists are that much deeper: a node ranked deep in one list
# still gets that list's share of its fused score (RRF). Only the best ``anchors_wanted`` of
# each are kept (merging deeper lists of a multi-part question let the whole question's list
# crowd out its parts). Measured: +0.02 gold recall at 1,600 tokens (bench/RESULTS.md, M).
FUSION_DEPTH = 3
# A one-part question keeps CANDIDATE_DEPTH times the anchors wanted as candidates (unless the
# request sets ``semantic_k``, which is then exact; the budget still cuts what is shown): once
# long heading-less files rank by their length, the answer is often just below the first
# ``anchors_wanted`` (+0.02 gold recall at 400 and 800 tokens on speckit-deacon,
# bench/RESULTS.md issue 31). A multi-part question's lists stay ``anchors_wanted`` deep
# (deeper, the whole question's list crowded out its parts).
CANDIDATE_DEPTH = 2
# Only below MAX_DEFAULT_K anchors (budgets under 1,200 tokens): a build that already takes the
# most anchors gained nothing on the real corpora from a deeper list, and the team's fieldnote
# corpus lost 0.05 gold recall at 1,600 tokens (0.02 with the list capped at 32).

# A section names an entity through this edge; a hop walks on to the other sections naming it
# (ContextBuilder._through) instead of stopping at the entity.
CONNECTOR_EDGE = "MENTIONS"

# A wider build brings the small families of its best matches (ContextBuilder._families).
FAMILY_EDGE = PARENT_OF
FAMILY_BUDGET = 1200
FAMILY_SEEDS = 3
FAMILY_SIZE = 5
FAMILY_FACTOR = 0.8


#: what a task-driven build says when the project has no node to match the task against
EMPTY_WARNING = (
    "this project's graph is empty, so nothing matched the task: ingest the project first "
    "(`kg ingest .`, `kg sync`, or the ingest_markdown tool)"
)


class GraphSource(Protocol):
    async def as_of(self) -> tuple[int, datetime | None]: ...
    async def policies(self) -> list[Policy]: ...
    async def document_types(self, types: Sequence[str]) -> dict[str, str]: ...
    async def nodes(self, node_ids: Sequence[str]) -> list[NodeRow]: ...
    async def neighbours(
        self,
        frontier: Sequence[str],
        *,
        exclude: Sequence[str],
        edge_types: Sequence[str],
        node_types: Sequence[str],
        limit: int,
        fanout: int | None = None,
    ) -> list[tuple[EdgeRow, NodeRow]]: ...
    async def edges_among(
        self, node_ids: Sequence[str], edge_types: Sequence[str]
    ) -> list[EdgeRow]: ...
    async def semantic(
        self, text: str, vector: str | None, k: int, node_types: Sequence[str]
    ) -> list[tuple[str, float, float]]:
        """Hybrid matches for ``text``; full-text ones only when ``vector`` is None."""
        ...

    async def embedding_state(self) -> EmbeddingState: ...


@dataclass
class _Reached:
    row: NodeRow
    verdict: NodeVerdict
    score: float
    reason: str
    hop: int
    via: str | None = None  # the edge it was reached through
    status: str = ""  # superseded, deprecated, ...: not current (kg.context.staleness)
    replaced_by: tuple[str, ...] = ()  # its successors as shown (policy-checked)


class ContextBuilder:
    def __init__(self, source: GraphSource, embedder: EmbeddingProvider | None = None) -> None:
        self.source = source
        self.embedder = embedder

    async def build(self, req: ContextRequest) -> ContextGraph:
        as_of, as_of_time = await self.source.as_of()
        governance = await self._governance(req)
        warnings: list[str] = []
        semantic: list[tuple[str, float, float]] = []
        embedder: str | None = None  # the model that embedded the task, if one did
        if req.mode == "semantic" or (req.mode == "policy_first" and not req.anchors):
            semantic, embedder = await self._semantic_anchors(req, warnings)
            if embedder and self.embedder is not None and self.embedder.is_fallback:
                warnings.append(FALLBACK_WARNING)
            if as_of_time is None:  # no node at all in this project
                warnings.append(EMPTY_WARNING)

        reached, denied = await self._anchors(req, semantic, governance)
        # A denied match is counted (governance), never named: not even in the match list
        # the result and the ContextGraphBuilt event carry.
        matches = [(n, sim) for n, sim, _ in semantic if n not in denied]
        allowed_filter: set[str] = set()
        if req.mode == "policy_first":
            allowed_filter = await self._add_governing_policies(reached, denied, governance)

        await self._families(req, reached, denied, governance, {n for n, _, _ in semantic})
        depth = await self._expand(req, reached, denied, governance, as_of_time, allowed_filter)
        left_out = await self._supersede(req, reached, denied, governance)
        if left_out:
            warnings.append(
                f"{left_out} superseded or deprecated node(s) left out (include_superseded=false)"
            )
        _prefer_originals(reached)
        embedder = embedder if semantic else None
        return await self._assemble(
            req, reached, governance, as_of, depth, (matches, embedder), warnings
        )

    async def _governance(self, req: ContextRequest) -> Governance:
        policies = {p.policy_id: p for p in await self.source.policies()}
        unknown = [p for p in req.policies if p not in policies]
        if unknown:
            raise ValidationError(
                f"unknown policy id(s) {', '.join(unknown)} in 'policies': list the project's "
                "policies with `kg query --type Policy TEXT` and use their ids"
            )
        for policy_id in req.policies:  # requested policies apply to every node of this build
            p = policies[policy_id]
            policies[policy_id] = replace(p, rule=p.rule.model_copy(update={"scope": "project"}))
        types = selected_types(policies.values())
        return Governance(policies, file_types=await self.source.document_types(types))

    async def _semantic_anchors(
        self, req: ContextRequest, warnings: list[str]
    ) -> tuple[list[tuple[str, float, float]], str | None]:
        """The matches of the task (and of each part of a multi-part one), and the model that
        embedded it: None when the matches are full-text ones (no embedder, the embedder
        unavailable or not the index's model; ``warnings`` then says why)."""
        assert req.task is not None
        wanted = req.anchors_wanted
        texts = [req.task, *question_parts(req.task)]
        state = await self.source.embedding_state()
        vectors, notes = await task_vectors(self.embedder, state, texts)
        warnings.extend(notes)
        lists = []
        for i, text in enumerate(texts):
            depth = FUSION_DEPTH * wanted
            vector = None if vectors is None else vectors[i]
            found = await self.source.semantic(text, vector, depth, req.node_types)
            lists.append(found[:wanted])
        embedder = self.embedder.model_id if vectors is not None and self.embedder else None
        if len(lists) == 1:  # one question, no explicit semantic_k: CANDIDATE_DEPTH deeper
            deeper = req.semantic_k is None and wanted < MAX_DEFAULT_K
            return found[: CANDIDATE_DEPTH * wanted if deeper else wanted], embedder
        return merge_parts(lists, wanted + 2 * len(lists)), embedder

    async def _anchors(
        self, req: ContextRequest, semantic: list[tuple[str, float, float]], gov: Governance
    ) -> tuple[dict[str, _Reached], set[str]]:
        wanted = list(dict.fromkeys([*req.anchors, *(n for n, _, _ in semantic)]))
        rows = {r.node_id: r for r in await self.source.nodes(wanted)}
        missing = [a for a in req.anchors if a not in rows]
        if missing:
            raise NotFoundError(
                f"anchor node(s) {', '.join(missing)} not found in this project: check the ids "
                "(`kg query TEXT` or the query_knowledge_graph tool finds nodes)"
            )
        # A match ranks by its fused (vector + full-text) score, the best one at 1.0: ranking by
        # vector similarity alone put sections only full text found below every neighbour.
        best = max((score for _, _, score in semantic), default=1.0) or 1.0
        matched = {n: (rank, sim, score / best) for rank, (n, sim, score) in enumerate(semantic, 1)}
        intent = task_intent(req.task)
        reached: dict[str, _Reached] = {}
        denied: set[str] = set()
        for node_id in wanted:
            row = rows.get(node_id)
            if row is None:
                continue
            verdict = gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
            if verdict.denied:
                denied.add(node_id)
            elif node_id in req.anchors:
                reached[node_id] = _Reached(row, verdict, 1.0, "anchor", 0)
            else:
                rank, sim, relevance = matched[node_id]
                how = f"sim {sim:.2f}" if sim else "full text"
                reason = f"match #{rank} ({how})"  # every node says it: short
                score = (
                    max(relevance, 0.05)
                    * prior(node_id)
                    * content_factor(row.content)
                    * unstructured_factor(node_id, row.content)
                    * intent_factor(row.labels, intent)
                )
                reached[node_id] = _Reached(row, verdict, score, reason, 0)
        return reached, denied

    async def _families(
        self,
        req: ContextRequest,
        reached: dict[str, _Reached],
        denied: set[str],
        gov: Governance,
        matches: set[str],
    ) -> None:
        """A wider build (``token_budget`` >= FAMILY_BUDGET) also brings the small family of
        each of its best FAMILY_SEEDS matches: the other sections under the same heading, when
        there are at most FAMILY_SIZE of them, at FAMILY_FACTOR of the match's score. Such a
        family is read together (an ADR's context, decision and consequences; an endpoint's
        parameters, returns and errors; a retrospective's went well / did not / actions), and a
        question matching one member is often answered by another in words the question does
        not use ("why" matches the consequences, the answer is the context). Measured on
        bench_quality: +0.03 gold recall at 1,600 tokens, none lost; at 800 the siblings
        displaced as many answers as they brought, so a prompt-sized build stays matches only.
        Siblings are reached like a first hop (policy-checked, the request's edge and node
        types), and they are not expanded further."""
        if (
            req.token_budget is None
            or req.token_budget < FAMILY_BUDGET
            or req.max_depth < 1
            or (req.edge_types and FAMILY_EDGE not in req.edge_types)
        ):
            return
        best = sorted(
            (reached[n] for n in matches if n in reached and n not in req.anchors),
            key=lambda r: (-round(r.score, 9), r.row.node_id),
        )[:FAMILY_SEEDS]
        seeds = {r.row.node_id: r for r in best}
        if not seeds:
            return
        up = await self.source.neighbours(
            sorted(seeds), exclude=[], edge_types=[FAMILY_EDGE], node_types=[],
            limit=4 * len(seeds), fanout=4,
        )  # fmt: skip
        parent_of = {e.to_node: e.from_node for e, _ in up if e.to_node in seeds}
        parents = set(parent_of.values())
        if not parents:
            return
        down = await self.source.neighbours(
            sorted(parents), exclude=[], edge_types=[FAMILY_EDGE], node_types=[],
            limit=len(parents) * (FAMILY_SIZE + 2), fanout=FAMILY_SIZE + 1,
        )  # fmt: skip
        family: dict[str, list[NodeRow]] = {}
        for edge, row in down:
            if edge.from_node in parents and edge.to_node == row.node_id:
                family.setdefault(edge.from_node, []).append(row)
        for seed_id, parent in sorted(parent_of.items()):
            members = family.get(parent, [])
            if len(members) > FAMILY_SIZE:
                continue  # a large document's headings are not one unit of meaning
            seed = seeds[seed_id]
            for row in members:
                node_id = row.node_id
                if node_id in reached or node_id in denied:
                    continue
                if req.node_types and row.node_type not in req.node_types:
                    continue
                verdict = gov.admit(row.node_type, row.labels, row.governed_by, node_id)
                if verdict.denied:
                    denied.add(node_id)
                    continue
                score = seed.score * FAMILY_FACTOR * prior(node_id) * content_factor(row.content)
                reached[node_id] = _Reached(row, verdict, score, f"beside {seed_id}", 1)

    async def _add_governing_policies(
        self, reached: dict[str, _Reached], denied: set[str], gov: Governance
    ) -> set[str]:
        """policy_first: put the policies governing the anchors into the graph, and return the
        allow_actions policies among them (expansion keeps only what those allow)."""
        governing: dict[str, str] = {}
        for anchor_id, item in sorted(reached.items()):
            v = item.verdict
            for policy_id in [*v.actions, *v.redacted_by, *item.row.governed_by]:
                governing.setdefault(policy_id, anchor_id)
        rows = await self.source.nodes(sorted(set(governing) - set(reached)))
        for row in rows:
            verdict = gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
            if verdict.denied:
                denied.add(row.node_id)
                continue
            reason = f"policy governing {governing[row.node_id]}"
            reached[row.node_id] = _Reached(row, verdict, 0.99, reason, 0)
        return {
            p
            for p in governing
            if p in gov.policies and gov.policies[p].rule.effect == "allow_actions"
        }

    async def _expand(
        self,
        req: ContextRequest,
        reached: dict[str, _Reached],
        denied: set[str],
        gov: Governance,
        as_of_time: datetime | None,
        allowed_filter: set[str],
    ) -> int:
        frontier = sorted(n for n, r in reached.items() if r.hop == 0)
        wanted = sorted(set(terms(req.task))) if req.task else []
        intent = task_intent(req.task)
        limit = expansion_limit(req)
        depth = 0
        for hop in range(1, req.max_depth + 1):
            if not frontier:
                break
            rows = await self.source.neighbours(
                frontier,
                exclude=sorted(set(reached) | denied),
                edge_types=req.edge_types,
                node_types=req.node_types,
                limit=limit,
                fanout=max(math.ceil(limit / len(frontier)), MIN_FANOUT),
            )
            new: dict[str, _Reached] = {}
            connectors: dict[str, tuple[float, str]] = {}
            for edge, row in rows:
                node_id = row.node_id
                parent_id = edge.from_node if edge.to_node == node_id else edge.to_node
                parent = reached.get(parent_id)
                if parent is None or node_id in denied or node_id in reached:
                    continue
                if edge.edge_type == CONNECTOR_EDGE and edge.to_node == node_id:
                    if gov.admit(row.node_type, row.labels, row.governed_by, node_id).denied:
                        denied.add(node_id)
                        continue
                    strength = parent.score * weight_factor(edge.weight)
                    if strength > connectors.get(node_id, (0.0, ""))[0]:
                        connectors[node_id] = (strength, parent_id)
                    continue
                candidate = new.get(node_id)
                verdict = (
                    candidate.verdict
                    if candidate
                    else gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
                )
                if verdict.denied:
                    denied.add(node_id)
                    continue
                if (
                    allowed_filter
                    and row.node_type != "Policy"
                    and not (set(verdict.actions) & allowed_filter)
                ):
                    continue
                score = _hop_score(parent.score, edge.weight, row, as_of_time, wanted)
                score *= intent_factor(row.labels, intent)
                reason = f"hop {hop} from {parent_id} via {edge.edge_type}"
                if candidate is None or (score, reason) > (candidate.score, candidate.reason):
                    new[node_id] = _Reached(row, verdict, score, reason, hop, edge.edge_id)
            if connectors:
                await self._through(
                    req, hop, connectors, (reached, new, denied), gov, (as_of_time, wanted),
                    allowed_filter,
                )  # fmt: skip
            if new:
                depth = hop
            reached.update(new)
            frontier = sorted(new)
        return depth

    async def _through(
        self,
        req: ContextRequest,
        hop: int,
        connectors: dict[str, tuple[float, str]],
        state: tuple[dict[str, _Reached], dict[str, _Reached], set[str]],
        gov: Governance,
        scoring: tuple[datetime | None, list[str]],
        allowed_filter: set[str],
    ) -> None:
        """Sections that name the same entities as this hop's frontier, as part of the same hop:
        an entity (API object, endpoint, event, concept) is a connector between the sections
        that mention it, not content, so it is walked through rather than shown (shown, the
        entities a section names filled the budget while the sections behind them were a hop
        further, bench/RESULTS.md issue 22). ``state``: what is reached, what this hop adds,
        what is denied; ``scoring``: the as-of time and the task's terms, as a hop scores;
        policy_first's filter applies as in any hop."""
        reached, new, denied = state
        as_of_time, wanted = scoring
        limit = expansion_limit(req)
        rows = await self.source.neighbours(
            sorted(connectors),
            exclude=sorted(set(reached) | set(new) | denied | set(connectors)),
            edge_types=[CONNECTOR_EDGE],
            node_types=req.node_types,
            limit=limit,
            fanout=max(math.ceil(limit / len(connectors)), MIN_FANOUT),
        )
        for edge, row in rows:
            node_id = row.node_id
            if edge.from_node != node_id or edge.to_node not in connectors or node_id in denied:
                continue
            verdict = gov.admit(row.node_type, row.labels, row.governed_by, node_id)
            if verdict.denied:
                denied.add(node_id)
                continue
            if allowed_filter and not set(verdict.actions) & allowed_filter:
                continue
            strength, parent_id = connectors[edge.to_node]
            # the two MENTIONS edges' factors, each at most 2, counted as one hop's
            score = _hop_score(strength / 2, edge.weight, row, as_of_time, wanted)
            reason = f"hop {hop} from {parent_id} via {edge.to_node}"
            candidate = new.get(node_id)
            if candidate is None or (score, reason) > (candidate.score, candidate.reason):
                new[node_id] = _Reached(row, verdict, score, reason, hop)

    async def _supersede(
        self, req: ContextRequest, reached: dict[str, _Reached], denied: set[str], gov: Governance
    ) -> int:
        """Mark stale nodes, bring in their successors (ranked at least as high), and leave the
        stale ones out if the request says so. Follows chains of replacements a few steps."""
        done: set[str] = set()
        left_out = 0
        for _ in range(3):
            stale = {n: r for n, r in reached.items() if n not in done and stale_status(r.row)}
            if not stale:
                break
            done |= set(stale)
            wanted = {s for r in stale.values() for s in successors(r.row)} - set(reached) - denied
            found: dict[str, tuple[NodeRow, NodeVerdict]] = {}
            for row in await self.source.nodes(sorted(wanted)) if wanted else []:
                verdict = gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
                if verdict.denied:
                    denied.add(row.node_id)
                else:
                    found[row.node_id] = (row, verdict)
            for node_id, item in sorted(stale.items()):
                shown = tuple(s for s in successors(item.row) if s in reached or s in found)
                for succ in shown:
                    current = reached.get(succ)
                    if current is None:
                        row, verdict = found[succ]
                        reached[succ] = _Reached(
                            row, verdict, item.score, f"supersedes {node_id}", item.hop
                        )
                    elif current.score < item.score:
                        current.score = item.score
                if not req.include_superseded:
                    del reached[node_id]
                    left_out += 1
                    continue
                item.status = stale_status(item.row)
                item.replaced_by = shown
                item.score *= STALE_FACTOR
        return left_out

    async def _assemble(
        self,
        req: ContextRequest,
        reached: dict[str, _Reached],
        gov: Governance,
        as_of: int,
        depth: int,
        semantic: tuple[list[tuple[str, float]], str | None],
        warnings: list[str],
    ) -> ContextGraph:
        ranked = sorted(reached.values(), key=lambda r: (-round(r.score, 9), r.row.node_id))
        truncated = len(ranked) > req.max_nodes
        query = terms(req.task) if req.task else []
        meter = Meter(
            req.token_budget, estimate_tokens(render(req.mode, as_of, [], [], {})) + HEADER_TOKENS
        )
        chosen: list[ContextNode] = []
        kept: list[_Reached] = []
        grams: list[tuple[str, frozenset[int]]] = []
        copies: dict[str, list[str]] = {}
        candidates = ranked[: req.max_nodes]
        for index, item in enumerate(candidates):
            room = meter.room()
            if room is not None and room < MIN_NODE_TOKENS:
                truncated = True
                break
            readable = not (item.verdict.redacted or item.status)  # never read a redacted text
            smallest = meter.past(POINTER_SHARE)  # a pointer, if it comes to that
            if readable and cannot_fit(item.row, item.reason, room, pointer=smallest):
                truncated = True
                continue
            chars = allowance(req.token_budget, req.max_content_chars, len(chosen))
            lead = len(chosen) < LEAD_NODES
            node = self._shown(item, chars, query, lead=lead)
            if readable and meter.crowded(node_cost(node), len(candidates) - index, POINTER_SHARE):
                node = self._shown(item, chars, query, lead=lead, pointer=True)
            if not meter.fits(node_cost(node)):
                truncated = True
                smaller = shrink_to_fit(node, item.row, meter, query)
                if smaller is None:
                    continue
                node = smaller
            if readable:
                original, own = copy_of(item.row.content, grams)
                if original is not None:
                    copies.setdefault(original, []).append(item.row.node_id)
                    continue
                grams.append((item.row.node_id, own))
            chosen.append(node)
            kept.append(item)
            meter.add(node_cost(node))
        chosen = [replace(n, copies=tuple(copies.get(n.node_id, ()))) for n in chosen]
        edges, edges_truncated = await self._edges(req, kept, meter)
        truncated = truncated or edges_truncated
        granted: dict[str, tuple[tuple[str, ...], list[str]]] = {}
        for item in kept:
            for policy_id, actions in item.verdict.actions.items():
                granted.setdefault(policy_id, (actions, []))[1].append(item.row.node_id)
        allowed: dict[str, dict[str, Any]] = {
            p: {"actions": list(actions), "nodes": sorted(nodes)}
            for p, (actions, nodes) in sorted(granted.items())
        }
        summary = GovernanceSummary(
            policies_applied=tuple(sorted(gov.applied)),
            excluded_by_policy=dict(sorted(gov.excluded.items())),
            redacted_by_policy=dict(sorted(gov.redacted.items())),
            excluded_count=gov.excluded_nodes,
            redacted_count=sum(1 for n in chosen if n.redacted),
            sensitive_count=sum(1 for r in kept if "sensitive" in r.row.labels),
            allowed_actions=allowed,
        )
        rendering = render(req.mode, as_of, chosen, edges, allowed)
        data_tokens = structured_tokens(chosen, edges)
        while (
            req.token_budget is not None
            and (chosen or edges)
            and (estimate_tokens(rendering) > req.token_budget or data_tokens > req.token_budget)
        ):  # the header reserve fell short (many allowed actions): drop from the tail
            truncated = True
            if edges:
                edges.pop()
            else:
                chosen.pop()
            rendering = render(req.mode, as_of, chosen, edges, allowed)
            data_tokens = structured_tokens(chosen, edges)
        token_estimate = estimate_tokens(rendering)
        budget = Budget(
            max_nodes=req.max_nodes,
            max_depth=req.max_depth,
            max_edges=edge_budget(req),
            token_budget=req.token_budget,
            nodes_used=len(chosen),
            edges_used=len(edges),
            depth_reached=depth,
            tokens_used=token_estimate,
            truncated=truncated,
            structured_tokens=data_tokens,
        )
        content_hash = graph_hash(req.mode, as_of, chosen, edges, summary)
        return ContextGraph(
            mode=req.mode,
            nodes=tuple(chosen),
            edges=tuple(edges),
            governance=summary,
            budget=budget,
            as_of_position=as_of,
            rendering=rendering,
            token_estimate=token_estimate,
            content_hash=content_hash,
            semantic_anchors=tuple((n, round(s, 6)) for n, s in semantic[0]),
            embedder=semantic[1],
            warnings=tuple(warnings),
        )

    async def _edges(
        self, req: ContextRequest, chosen: list[_Reached], meter: Meter
    ) -> tuple[list[ContextEdge], bool]:
        """The edges among the chosen nodes, within the edge budget and what the token budget
        leaves after the nodes: first the edge each node was reached through (so the graph
        explains itself), then the strongest others. Dense neighbourhoods have several times
        more edges than nodes; unbounded, they made up most of a rendering."""
        budget = edge_budget(req)
        among = await self.source.edges_among([r.row.node_id for r in chosen], req.edge_types)
        reach = {r.via for r in chosen if r.via}
        ordered = sorted(among, key=lambda e: (e.edge_id not in reach, -e.weight, e.edge_id))
        kept: list[ContextEdge] = []
        for e in ordered[:budget]:
            edge = ContextEdge(e.edge_id, e.edge_type, e.from_node, e.to_node, e.weight)
            cost = edge_cost(edge)
            if not meter.fits(cost):
                break
            kept.append(edge)
            meter.add(cost)
        kept.sort(key=lambda e: e.edge_id)
        return kept, len(kept) < len(among)

    def _shown(
        self, item: _Reached, chars: int, query: list[str], *, lead: bool, pointer: bool = False
    ) -> ContextNode:
        return shown_node(
            item.row,
            redacted=item.verdict.redacted,
            score=item.score,
            reason=item.reason,
            hop=item.hop,
            chars=chars,
            query=query,
            status=item.status,
            superseded_by=item.replaced_by,
            crumb_chars=None if lead else CRUMB_CHARS,
            pointer=pointer,
        )


def _prefer_originals(reached: dict[str, _Reached]) -> None:
    """Among the best candidates, a copy gives its rank to its original (kg.ranking's
    ``copies_among``: the file it cites, the text holding it, the one outside a run folder) and
    keeps NONCURRENT_FACTOR of it: a frozen copy that matched the question's words brings the
    living document instead of taking its place. Redacted and stale nodes' texts are not read."""
    ranked = sorted(reached.values(), key=lambda r: (-round(r.score, 9), r.row.node_id))
    readable = [
        (r.row.node_id, r.row.content) for r in ranked if not (r.verdict.redacted or r.status)
    ]
    for copy, source in copies_among(readable).items():
        item, original = reached[copy], reached[source]
        original.score = max(original.score, item.score)
        item.score = original.score * NONCURRENT_FACTOR


def _hop_score(
    parent: float, weight: float, row: NodeRow, as_of_time: datetime | None, wanted: list[str]
) -> float:
    """A node reached by a hop: its parent's score decayed, by the edge's weight, the node's
    recency, its path prior and how many of the task's terms it shares."""
    return (
        parent
        * HOP_DECAY
        * weight_factor(weight)
        * recency_factor(row.updated_at, as_of_time)
        * prior(row.node_id)
        * task_overlap(wanted, row.name, row.content)
    )


def expansion_limit(req: ContextRequest) -> int:
    """Neighbours a hop reads, strongest edges first: twice the nodes the build can show
    (``max_nodes``, or fewer when the token budget cannot show that many: a node takes at least
    MIN_NODE_TOKENS), which leaves room for policy exclusions. Reading 256 per hop for an
    800-token build that shows ten nodes was most of a semantic build's time at 100k nodes."""
    shown = req.max_nodes
    if req.token_budget is not None:
        shown = min(shown, req.token_budget // MIN_NODE_TOKENS)
    return max(2 * shown, 64)


def edge_budget(req: ContextRequest) -> int:
    return req.max_edges if req.max_edges is not None else 2 * req.max_nodes
