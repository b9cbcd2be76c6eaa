"""Application functions for context graphs, shared by the CLI and the MCP tools."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import asyncpg
import pydantic

from kg.config import Scope
from kg.context.builder import BUILDER_VERSION
from kg.context.request import ContextRequest
from kg.context.result import ContextGraph
from kg.embeddings.base import EmbeddingProvider
from kg.errors import NotFoundError, ValidationError
from kg.events import AppendResult, ContextGraphBuilt, ContextGraphUsed, EventMetadata
from kg.events.base import describe_validation_error
from kg.read.reader import Reader, Snapshot
from kg.runtime import Runtime
from kg.telemetry import traced
from kg.validation import MAX_ID_CHARS, check_text, check_texts, clip


def parse_request(**fields: Any) -> ContextRequest:
    """A :class:`ContextRequest`, or a :class:`ValidationError` naming each bad field."""
    try:
        return ContextRequest(**{k: v for k, v in fields.items() if v is not None})
    except pydantic.ValidationError as exc:
        raise ValidationError(describe_validation_error(exc, "context graph request")) from None


async def build_in_snapshot(
    pool: asyncpg.Pool, scope: Scope, request: ContextRequest, embedder: EmbeddingProvider | None
) -> ContextGraph:
    """Build from one consistent snapshot of the projection on ``pool`` as it is (no catch-up,
    no event written): a replay's schema, or a benchmark's database."""
    async with Reader(pool, scope).snapshot(catch_up=False) as snap:
        return await build_with_rules(snap, id(pool), request, embedder)


async def _build(
    snap: Snapshot, request: ContextRequest, embedder: EmbeddingProvider | None
) -> ContextGraph:
    """A context graph from ``snap`` (policies applied by the builder; no event is written)."""
    from kg.context.builder import ContextBuilder  # the builder is only needed by builds

    return await ContextBuilder(snap.graph_reader, embedder).build(request)


async def build_with_rules(
    snap: Snapshot, pool_key: int, request: ContextRequest, embedder: EmbeddingProvider | None
) -> ContextGraph:
    """Build in ``snap``; when MUST directives govern the files of the graph's nodes, they are
    added to it (:mod:`kg.directives.context`) and the graph is built again within the rest
    of the token budget, so the whole stays inside it; the MUSTs of a file that no longer fits
    are dropped. A reproduction takes the same steps."""
    from kg.directives import context as rules

    graph = await _build(snap, request, embedder)
    governance = (await snap.governed()).governance
    musts = await rules.musts_for(
        snap, pool_key, rules.node_files(graph.nodes), request.task or "",
        request.token_budget, governance,
    )  # fmt: skip
    if not musts:
        return graph
    extra = rules.tokens(musts)
    if request.token_budget is not None:
        # The same semantic anchors as the first build: only the budget shrinks.
        inner = request.model_copy(
            update={
                "token_budget": max(1, request.token_budget - extra),
                "semantic_k": request.anchors_wanted,
            }
        )
        graph = await _build(snap, inner, embedder)
        # A file the smaller budget left out takes its MUSTs with it.
        still = await rules.musts_for(
            snap, pool_key, rules.node_files(graph.nodes), request.task or "",
            request.token_budget, governance,
        )  # fmt: skip
        kept = {d.node_id for d in still}
        reserved = extra
        musts = [d for d in musts if d.node_id in kept]
        if not musts:  # the smaller graph's files call for other MUSTs: those the room holds
            for d in still:
                if rules.tokens([*musts, d]) > reserved:
                    break
                musts.append(d)
        if not musts:
            return replace(graph, budget=replace(graph.budget, token_budget=request.token_budget))
        extra = rules.tokens(musts)
    return replace(
        graph,
        budget=replace(
            graph.budget,
            token_budget=request.token_budget,
            tokens_used=graph.budget.tokens_used + extra,
        ),
        rendering=graph.rendering + rules.block(musts),
        token_estimate=graph.token_estimate + extra,
        content_hash=rules.combined_hash(graph.content_hash, musts),
        directives=tuple({"node_id": d.node_id, "text": d.text, "source": d.source} for d in musts),
    )


def _needs_embedder(request: ContextRequest) -> bool:
    return request.mode == "semantic" or (request.mode == "policy_first" and not request.anchors)


async def resolve_anchors(rt: Runtime, request: ContextRequest) -> ContextRequest:
    """The request with anchors given by name (a path, ``path:line``, ``FR1``, ``Charge``)
    replaced by their node ids, so the logged request re-derives the same graph; an anchor
    that names nothing is the one typed error of :mod:`kg.read.names`."""
    if not request.anchors:
        return request
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        anchors = tuple(await governed.resolve_known(request.anchors, "anchor node"))
    if anchors == request.anchors:
        return request
    return request.model_copy(update={"anchors": anchors})


@traced("kg.context.build")
async def build_context_graph(
    rt: Runtime, request: ContextRequest, metadata: EventMetadata | None = None
) -> ContextGraph:
    """Build a context graph on the current log and record it as ``ContextGraphBuilt``.
    Anchors may be entity names as well as node ids."""
    request = await resolve_anchors(rt, request)
    embedder = rt.embedder if _needs_embedder(request) else None
    async with rt.reader().snapshot() as snap:
        graph = await build_with_rules(snap, id(rt.app_pool), request, embedder)
        state = await snap.state()
    lag = state.warning()
    if lag is not None:  # never silently behind (the graph and its hash are as of its position)
        graph = replace(graph, behind=state.behind, warnings=(*graph.warnings, lag))
    graph_id = f"cg_{uuid.uuid4().hex}"
    event = ContextGraphBuilt(
        context_graph_id=graph_id,
        mode=graph.mode,
        request=request.model_dump(mode="json"),
        as_of_position=graph.as_of_position,
        node_ids=tuple(n.node_id for n in graph.nodes),
        edge_ids=tuple(e.edge_id for e in graph.edges),
        content_hash=graph.content_hash,
        policies_applied=graph.governance.policies_applied,
        excluded_count=graph.governance.excluded_count,
        redacted_count=graph.governance.redacted_count,
        semantic_anchors=graph.semantic_anchors,
        embedder=graph.embedder,
        token_estimate=graph.token_estimate,
        builder_version=BUILDER_VERSION,
    )
    meta = metadata or EventMetadata(session_id=request.session_id)
    await rt.store.append(
        rt.scope, f"context_graph:{graph_id}", [event], expected_version=0, metadata=meta
    )
    return replace(graph, context_graph_id=graph_id)


async def record_context_usage(
    rt: Runtime,
    context_graph_id: str,
    tool_call_id: str,
    usage_type: str = "read",
    node_ids: Sequence[str] = (),
    metadata: EventMetadata | None = None,
) -> AppendResult:
    """Record that a tool call used a context graph (or some of its nodes). Retrying the same
    tool call is a no-op."""
    check_text("context_graph_id", context_graph_id, MAX_ID_CHARS)
    check_text("tool_call_id", tool_call_id, 200)
    check_text("usage_type", usage_type, 50)
    check_texts("node_ids", node_ids)
    async with rt.reader().records() as records:
        graphs = await records.context_graphs([context_graph_id])
    if not graphs:
        raise NotFoundError(
            f"context graph {clip(context_graph_id)} not found in this project: use the "
            "context_graph_id returned by build_context_graph"
        )
    unknown = set(node_ids) - set(graphs[0].node_ids)
    if unknown:
        # Not echoed: an id outside the graph may be one a policy hid from it.
        raise ValidationError(
            f"{len(unknown)} of the node ids are not in context graph {context_graph_id}: "
            "list only nodes the graph contained"
        )
    try:
        event = ContextGraphUsed(
            context_graph_id=context_graph_id,
            tool_call_id=tool_call_id,
            usage_type=usage_type,
            node_ids=tuple(node_ids),
        )
    except pydantic.ValidationError as exc:
        raise ValidationError(describe_validation_error(exc, "context usage")) from None
    return await rt.store.append(
        rt.scope,
        f"context_graph:{context_graph_id}",
        [event],
        idempotency_key=f"usage:{context_graph_id}:{tool_call_id}",
        metadata=metadata or EventMetadata(tool_call_id=tool_call_id),
    )
