"""The MCP tools: thin, typed shells over the application functions.

Each tool validates its arguments against its published input schema (the SDK does, from the
annotations below), calls one application function with the server's Runtime, and returns a
structured result whose schema is published too. Errors the user or agent caused are
:class:`kg.errors.KgError`; the server turns them into tool errors carrying their message.
Limits in the schemas are the application's own (it re-checks them).
"""

from __future__ import annotations

import inspect
import json
import uuid
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.tools import Tool
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel, Field

from kg import browse, decisions, graph_queries, lineage
from kg.context import service
from kg.context.request import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_NODES,
    Anchors,
    MaxContentChars,
    MaxDepth,
    MaxEdges,
    MaxNodes,
    SemanticK,
    TokenBudget,
    default_mode,
)
from kg.context.result import ContextGraph
from kg.rules import service as directives
from kg.validation import IdStr, LongStr, PathStr, QueryStr, ShortStr, TypeStr, UsageStr
from mcp_server.logs import log
from mcp_server.models import (
    ContextGraphOut,
    ContextUsageOut,
    DecisionOut,
    DetectedOut,
    DirectivesOut,
    IngestOut,
    LineageOut,
    LintOut,
    LintProblemOut,
    NeighborsOut,
    NodeOut,
    PathOut,
    SearchOut,
    inline_refs,
)
from mcp_server.resources import MARKDOWN, uri_of
from mcp_server.state import KgContext, guard, metadata_of, runtime_of

# Every string argument is bounded and storable (no NUL, no lone surrogate: kg.validation),
# so the SDK refuses a bad one by name before any work is done.
Id = IdStr
NodeIds = Annotated[tuple[Id, ...], Field(max_length=1000)]
ProjectPath = PathStr
SessionId = Annotated[
    ShortStr | None, Field(description="The agent's session id, recorded with the event")
]


#: How every tool names a node (one resolver: kg.read.names).
NODE_NAME = (
    "an id ('component:checkout'), a path ('docs/prd.md', 'docs/prd.md#goals'), a source "
    "location ('src/shop/checkout.py:42': the function or class there), a requirement id "
    "('FR1') or an extracted entity's name ('Charge')"
)


def structured(model: BaseModel | dict[str, Any], text: str | None = None) -> CallToolResult:
    """A result with ``model`` (or data already shaped like an output model) as structured
    content and, for the model reading the text content, ``text`` or else the same data as
    compact JSON (the SDK's default is indented)."""
    data = model if isinstance(model, dict) else model.model_dump(mode="json")
    body = text if text is not None else json.dumps(data, separators=(",", ":"), default=str)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)


def _summary(graph: ContextGraph) -> str:
    gov, budget = graph.governance, graph.budget
    lines = [
        f"context_graph_id: {graph.context_graph_id}",
        f"{len(graph.nodes)} nodes, {len(graph.edges)} edges, ~{graph.token_estimate} tokens"
        f"{' (truncated by the budget)' if budget.truncated else ''}; excluded by policy "
        f"{gov.excluded_count}, redacted {gov.redacted_count}, sensitive {gov.sensitive_count}",
    ]
    lines += [f"warning: {w}" for w in graph.warnings]
    return "\n".join(lines)


async def build_context_graph(
    ctx: KgContext,
    anchors: Annotated[
        Anchors,
        Field(description="The nodes to start from, each " + NODE_NAME),
    ] = (),
    task: Annotated[
        QueryStr | None, Field(description="What you are doing, in a sentence or two")
    ] = None,
    mode: Annotated[
        Literal["anchor", "semantic", "policy_first"] | None,
        Field(
            description="anchor: neighbourhood of the anchors. semantic: nodes matching the task "
            "text, then their neighbourhood. policy_first: the policies governing the anchors or "
            "task and what they allow. Default: anchor if anchors are given, else semantic."
        ),
    ] = None,
    max_nodes: Annotated[MaxNodes, Field(description="Node budget")] = DEFAULT_MAX_NODES,
    max_depth: Annotated[MaxDepth, Field(description="Hops from the anchors")] = DEFAULT_MAX_DEPTH,
    max_edges: Annotated[
        MaxEdges, Field(description="Edge budget (default 2 x max_nodes); reach edges first")
    ] = None,
    token_budget: Annotated[
        TokenBudget,
        Field(
            description="Tokens the rendering and the structured nodes/edges may each take "
            "(default: the project's KG_TOKEN_BUDGET, else 800). Raise it for a wider build",
        ),
    ] = None,
    max_content_chars: Annotated[
        MaxContentChars,
        Field(
            description="Most characters of one node's content; within the token budget a "
            "long node shows the passages matching the task (get_node has the full text)",
        ),
    ] = DEFAULT_MAX_CONTENT_CHARS,
    node_types: Annotated[NodeIds, Field(description="Only expand to these node types")] = (),
    edge_types: Annotated[NodeIds, Field(description="Only follow these edge types")] = (),
    policies: Annotated[
        NodeIds, Field(description="Extra policy ids applied to every node of this build")
    ] = (),
    semantic_k: Annotated[
        SemanticK,
        Field(
            description="Semantic matches used as anchors (default: one per 50 tokens of budget, "
            "between 12 and 24)",
        ),
    ] = None,
    include_superseded: Annotated[
        bool,
        Field(
            description="Show superseded/deprecated nodes as 'superseded by X' (no content); "
            "false leaves them out. Their successors are brought in either way"
        ),
    ] = True,
    session_id: SessionId = None,
    task_id: Annotated[ShortStr | None, Field(description="Your task's id")] = None,
) -> Annotated[CallToolResult, ContextGraphOut]:
    """Build a small, policy-filtered context graph for this turn and log it (ContextGraphBuilt).

    Give anchors (node ids you know) and/or a task text. The text result is a compact Markdown
    rendering for your prompt plus the context_graph_id; the structured result has every node
    with its score and the reason it is there, the edges, governance (what policies excluded or
    redacted, what actions they allow) and the budget used. Keep the context_graph_id: pass it
    to record_context_usage and record_decision."""
    await guard(ctx, "build_context_graph", anchors)
    rt = runtime_of(ctx)
    request = service.parse_request(
        anchors=anchors, task=task, mode=mode or default_mode(anchors),
        max_nodes=max_nodes, max_depth=max_depth, max_edges=max_edges,
        token_budget=token_budget or rt.settings.token_budget,
        max_content_chars=max_content_chars,
        node_types=node_types, edge_types=edge_types, policies=policies, semantic_k=semantic_k,
        include_superseded=include_superseded, session_id=session_id, task_id=task_id,
    )  # fmt: skip
    graph = await service.build_context_graph(rt, request, metadata_of(ctx, session_id))
    for warning in graph.warnings:  # also in the result; a client's log shows them too
        await log(ctx, "warning", warning)
    # to_dict() is already the output model's shape (tests/mcp checks it against the schema);
    # validating 128 nodes into pydantic models again only to dump them cost ~7 ms a call.
    return structured(graph.to_dict(), f"{graph.rendering}\n{_summary(graph)}\n")


async def record_context_usage(
    ctx: KgContext,
    context_graph_id: Annotated[Id, Field(description="The id build_context_graph returned")],
    tool_call_id: Annotated[
        ShortStr | None,
        Field(
            description="Id of your tool call or step that used the graph; recording the same "
            "id again is a no-op. Default: a fresh id (then a retry records twice).",
        ),
    ] = None,
    usage_type: Annotated[UsageStr, Field(description="How it was used: read, edit, ...")] = "read",
    node_ids: Annotated[
        NodeIds,
        Field(
            max_length=1000, description="The graph's nodes you actually relied on (default: all)"
        ),
    ] = (),
    session_id: SessionId = None,
) -> Annotated[CallToolResult, ContextUsageOut]:
    """Record that a tool call used a context graph, or some of its nodes (ContextGraphUsed).

    A decision recorded later with this context_graph_id is then linked to the nodes you list
    here rather than to every node the graph showed."""
    await guard(ctx, "record_context_usage", node_ids)
    call_id = tool_call_id or f"mcp-{uuid.uuid4().hex}"
    result = await service.record_context_usage(
        runtime_of(ctx), context_graph_id, call_id, usage_type, node_ids,
        metadata_of(ctx, session_id),
    )  # fmt: skip
    return structured(
        ContextUsageOut(
            context_graph_id=context_graph_id,
            tool_call_id=call_id,
            usage_type=usage_type,
            position=result.last_position,
            duplicate=result.duplicate,
        )
    )


async def record_decision(
    ctx: KgContext,
    text: Annotated[LongStr, Field(min_length=1, description="What was decided")],
    rationale: Annotated[LongStr, Field(description="Why")] = "",
    decision_type: Annotated[
        TypeStr, Field(description="e.g. architecture, library, fix")
    ] = "general",
    confidence: Annotated[float | None, Field(ge=0.0, le=1.0)] = None,
    context_graph_ids: Annotated[
        NodeIds,
        Field(
            description="Context graphs that informed the decision, and served_ids of "
            "query_directives results (ds_...) whose rules it followed"
        ),
    ] = (),
    references: Annotated[
        NodeIds, Field(description="Other nodes the decision refers to, each " + NODE_NAME)
    ] = (),
    supersedes: Annotated[
        NodeIds, Field(description="Earlier decisions it replaces ('decision:...')")
    ] = (),
    decision_id: Annotated[
        str | None,
        Field(
            pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$",
            description="Your own id for it (e.g. a ticket); default: generated",
        ),
    ] = None,
    session_id: SessionId = None,
) -> Annotated[CallToolResult, DecisionOut]:
    """Record a decision (DecisionRecorded): a decision node linked by INFORMED_BY to the nodes
    of the context graphs that informed it (the nodes record_context_usage named, else all),
    by REFERENCES and SUPERSEDES to the nodes given. Decisions are immutable: to change one,
    record a new one that supersedes it."""
    await guard(ctx, "record_decision", (*references, *supersedes))
    recorded = await decisions.record_decision(
        runtime_of(ctx), text=text, rationale=rationale, decision_type=decision_type,
        confidence=confidence, context_graph_ids=context_graph_ids, references=references,
        supersedes=supersedes, decision_id=decision_id, metadata=metadata_of(ctx, session_id),
    )  # fmt: skip
    await log(ctx, "info", f"recorded {recorded.decision_id}")
    return structured(DecisionOut.model_validate(recorded.to_dict()))


async def trace_decision_lineage(
    ctx: KgContext,
    decision_id: Annotated[Id, Field(description="'decision:...' or the bare decision id")],
    direction: Annotated[
        Literal["upstream", "downstream", "both"],
        Field(
            description="upstream: the context graphs, nodes and sources that informed it; "
            "downstream: later context graphs that showed it and the decisions they informed"
        ),
    ] = "upstream",
    depth: Annotated[int, Field(ge=1, le=10, description="Steps to follow")] = 3,
) -> Annotated[CallToolResult, LineageOut]:
    """Explain a decision: the steps (decisions, context graphs, nodes, sources) and the links
    between them, each step with the log position, time and actor that created it."""
    target = decision_id if decision_id.startswith("decision:") else f"decision:{decision_id}"
    await guard(ctx, "trace_decision_lineage", [target])
    rt = runtime_of(ctx)
    traced = await lineage.trace_decision_lineage(rt, decision_id, direction, depth)
    result = structured(LineageOut.model_validate(traced.to_dict()))
    # The decision's own kg:// page (what it says, what informed it), embedded so that a client
    # can show it (or keep it as context) without a resources/read round trip.
    page = await browse.render(rt, target, lambda node_id, _type, labels: uri_of(node_id, labels))
    result.content.append(
        EmbeddedResource(
            type="resource",
            resource=TextResourceContents(uri=uri_of(target), mime_type=MARKDOWN, text=page),
        )
    )
    return result


async def query_knowledge_graph(
    ctx: KgContext,
    text: Annotated[QueryStr, Field(min_length=1, description="What to look for")],
    mode: Annotated[
        Literal["hybrid", "fulltext", "semantic"],
        Field(description="hybrid fuses full-text and vector rankings"),
    ] = "hybrid",
    node_types: Annotated[NodeIds, Field(description="Only these node types")] = (),
    limit: Annotated[int, Field(ge=1, le=100, description="Number of results")] = 10,
) -> Annotated[CallToolResult, SearchOut]:
    """Find nodes by words or meaning: use it to find node ids to anchor a context graph on.
    Results are policy-checked (hidden matches are only counted)."""
    await guard(ctx, "query_knowledge_graph")
    found = await graph_queries.query_knowledge_graph(
        runtime_of(ctx), text, mode=mode, node_types=node_types, limit=limit
    )
    return structured(found)


async def get_node(
    ctx: KgContext,
    node_id: Annotated[str, Field(description="The node: " + NODE_NAME)],
) -> Annotated[CallToolResult, NodeOut]:
    """One node in full: its whole content (a context graph shows only the passages of a long
    section that match the task, marked partial), properties and heading path; a document's
    outline (its sections' headings and ids). Policy-checked."""
    await guard(ctx, "get_node", [node_id])
    found = await graph_queries.get_node(runtime_of(ctx), node_id)
    title = found.breadcrumb or found.name
    outline = "".join(
        f"{'  ' * max(0, s.level - 1)}- {s.name} ({s.node_id})\n" for s in found.outline
    )
    outline = f"\n## Outline\n\n{outline}" if outline else ""
    result = structured(found, f"# {title} ({found.node_id})\n\n{found.content}\n{outline}")
    # Where the node's page lives, with its links to neighbours (resources/read).
    link = ResourceLink(
        type="resource_link", uri=uri_of(found.node_id), name=found.node_id, mime_type=MARKDOWN
    )
    result.content.append(link)
    return result


async def get_entity_neighbors(
    ctx: KgContext,
    node_id: Annotated[
        Id,
        Field(description="The node to start from: " + NODE_NAME),
    ],
    edge_types: Annotated[
        NodeIds, Field(description="Only follow these edge types (CALLS: callers and callees)")
    ] = (),
    depth: Annotated[int, Field(ge=1, le=3, description="Hops")] = 1,
    direction: Annotated[
        Literal["out", "in", "both"], Field(description="Edge direction to follow")
    ] = "both",
    limit: Annotated[int, Field(ge=1, le=500, description="Most neighbours returned")] = 100,
) -> Annotated[CallToolResult, NeighborsOut]:
    """The nodes around one node and the edges that reach them (policy-checked). Unlike
    build_context_graph it is not scored or logged: use it to explore."""
    await guard(ctx, "get_entity_neighbors", [node_id])
    found = await graph_queries.get_entity_neighbors(
        runtime_of(ctx), node_id, edge_types=edge_types, depth=depth, direction=direction,
        limit=limit,
    )  # fmt: skip
    return structured(found)


async def find_path(
    ctx: KgContext,
    source: Annotated[Id, Field(description="The start node: " + NODE_NAME)],
    target: Annotated[Id, Field(description="The end node: " + NODE_NAME)],
    max_depth: Annotated[int, Field(ge=1, le=6, description="Longest path searched")] = 4,
) -> Annotated[CallToolResult, PathOut]:
    """The shortest path between two nodes over edges of any type and direction, never through
    a node a policy denies. found is false when none is within max_depth."""
    await guard(ctx, "find_path", [source, target])
    found = await graph_queries.find_path(runtime_of(ctx), source, target, max_depth=max_depth)
    return structured(found)


async def ingest_markdown(
    ctx: KgContext,
    paths: Annotated[
        tuple[ProjectPath, ...],
        Field(
            max_length=1000,
            description="Project-relative Markdown files or folders; empty: the whole project",
        ),
    ] = (),
    force: Annotated[
        bool, Field(description="Re-ingest even files whose hash is unchanged")
    ] = False,
) -> Annotated[CallToolResult, IngestOut]:
    """Ingest Markdown specs into the graph: a Document node per file, a Section per heading,
    links and requirement ids as edges, and the entities the schema map asks for (endpoints,
    events, terms, relationships). Only what changed is appended; files outside the
    project are refused. Problems (bad UTF-8, broken front matter, ...) are listed per file.
    Policies decide whether this client may ingest the files (the call is refused, and the
    refusal logged, otherwise)."""
    from kg.governance.sync import checked_policy_files
    from kg.ingest.service import ingest_paths

    rt = runtime_of(ctx)
    await checked_policy_files(rt.settings.project_root)  # a broken policy file: ingest nothing
    await log(ctx, "info", f"ingesting {', '.join(paths) or 'the whole project'}")

    async def progress(done: int, total: int) -> None:
        await ctx.report_progress(done, total, f"{done} of {total} changed files written")

    report = await ingest_paths(
        rt, list(paths) or None, force=force, metadata=metadata_of(ctx), notify=progress
    )
    await log(ctx, "info", f"ingested {report.summary()}")
    for problem in report.problems[:20]:
        await log(ctx, "warning", str(problem))
    for warning in report.warnings:  # degraded, not failed (an embedder outage)
        await log(ctx, "warning", warning)
    return structured(IngestOut.model_validate(report.to_dict()))


async def lint_graph(
    ctx: KgContext,
    paths: Annotated[
        tuple[ProjectPath, ...],
        Field(max_length=1000, description="Files or folders to lint; empty: all"),
    ] = (),
) -> Annotated[CallToolResult, LintOut]:
    """Check the project's Markdown for dangling links and anchors, duplicate ids and malformed
    front matter, as `file:line: message`. Reads files only; writes nothing."""
    from kg.ingest.service import lint_project

    await guard(ctx, "lint_graph")
    rt = runtime_of(ctx)
    found = await lint_project(rt.settings.project_root, list(paths) or None)
    problems = [
        LintProblemOut(path=p.path, line=p.line, message=p.message, severity=p.severity)
        for p in found
    ]
    errors = sum(1 for p in problems if p.severity == "error")
    out = LintOut(errors=errors, warnings=len(problems) - errors, problems=problems)
    text = "\n".join(f"{p.path}:{p.line}: {p.message}" for p in problems) or "no problems"
    return structured(out, text)


TaskText = Annotated[QueryStr, Field(description="What you are doing, in a sentence or two")]
FilePaths = Annotated[
    tuple[ProjectPath, ...],
    Field(max_length=1000, description="Project-relative files in play (being read or edited)"),
]
Diff = Annotated[
    str, Field(max_length=1_000_000, description="A unified diff of your change (git diff)")
]
Layer = Annotated[
    ShortStr | None,
    Field(description="The layer if you know it: 1-Presentation, 2-Application, 3-Domain, "
          "4-Persistence, 5-Tests, 6-Docs, 7-Deployment (or its number)"),
]  # fmt: skip
Topics = Annotated[tuple[TypeStr, ...], Field(max_length=50, description="Topics if you know them")]


async def detect_context(
    ctx: KgContext,
    task: TaskText = "",
    paths: FilePaths = (),
    diff: Diff = "",
    layer: Layer = None,
    topics: Topics = (),
) -> Annotated[CallToolResult, DetectedOut]:
    """Detect a task's context: its architectural layer (with candidates and confidence when
    ambiguous), topics, languages and frameworks (from the project's manifests), and the layer
    of each file path, each with its evidence and an overall confidence in 0..1. Reads files
    only; writes nothing. query_directives does this itself: call this to check or to see why."""
    found = await directives.detect(
        runtime_of(ctx), task=task, paths=paths, diff=diff, layer=layer, topics=topics
    )
    return structured(DetectedOut.model_validate(found.to_dict()))


async def query_directives(
    ctx: KgContext,
    task: TaskText = "",
    paths: FilePaths = (),
    diff: Diff = "",
    layer: Layer = None,
    topics: Topics = (),
    strict_layer: Annotated[
        bool, Field(description="Leave out directives scoped to other layers")
    ] = False,
    token_budget: Annotated[
        int, Field(ge=100, le=20_000, description="Tokens the checklist may take")
    ] = 900,
    session_id: SessionId = None,
) -> Annotated[CallToolResult, DirectivesOut]:
    """The project's rules (AGENTS.md, .cursor/rules, docs/rules, ...) that apply to this
    task, as a prompt-ready checklist with file:line sources: MUST first (the three most
    relevant are never cut), then SHOULD and MAY, within the token budget. Give the task text
    and the files in play (or a diff). Logged (DirectivesServed), so a reviewer can see which
    rules you were given; the diagnostics say what was detected and what the budget cut."""
    served = await directives.query_directives(
        runtime_of(ctx), task=task, paths=paths, diff=diff, layer=layer, topics=topics,
        strict_layer=strict_layer, token_budget=token_budget,
        metadata=metadata_of(ctx, session_id),
    )  # fmt: skip
    d = served.diagnostics()
    summary = (
        f"served_id: {served.served_id}\nserved {d['served']} of {d['applicable']} applicable "
        f"directives, ~{d['token_estimate']} tokens, {d['cut_by_budget']} cut by the budget, "
        f"{d['excluded_by_policy']} withheld by policy"
    )
    return structured(
        DirectivesOut.model_validate(served.to_dict()), f"{served.checklist}\n{summary}\n"
    )


READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
APPENDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


# Tools whose structured result is handed over already shaped (``ContextGraph.to_dict()``, a
# test checks it against the schema): the SDK would otherwise validate it into the output
# model once more on every call, ~3 ms for a 128-node graph.
PRE_SHAPED = frozenset({"build_context_graph"})


def kg_tools() -> list[Tool]:
    """Every tool, as the SDK's ``Tool``. Building a context graph and recording usage or a
    decision append events (nothing is ever changed or deleted); the other tools only read.

    Output schemas are published with their ``$ref``s inlined (:func:`inline_refs`)."""
    tools: list[tuple[Any, ToolAnnotations]] = [
        (build_context_graph, APPENDS),
        (record_context_usage, APPENDS),
        (record_decision, APPENDS),
        (trace_decision_lineage, READ_ONLY),
        (query_knowledge_graph, READ_ONLY),
        (get_entity_neighbors, READ_ONLY),
        (get_node, READ_ONLY),
        (find_path, READ_ONLY),
        (ingest_markdown, APPENDS),
        (lint_graph, READ_ONLY),
        (detect_context, READ_ONLY),
        (query_directives, APPENDS),
    ]
    built = []
    for fn, hints in tools:
        tool = Tool.from_function(
            fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints
        )
        metadata = tool.fn_metadata
        if metadata.output_schema is not None:
            metadata.output_schema = inline_refs(metadata.output_schema)
        if tool.name in PRE_SHAPED:
            metadata.output_model = None  # published, not re-validated (see PRE_SHAPED)
        built.append(tool)
    return built
