"""MCP prompts: what agents (and their reviewers) do with kg, ready to drop into a conversation.

A prompt is chosen by a person in the client's UI (a slash command in most clients); its
messages carry the project's own material, fetched with the same application functions and
policy checks as the tools, so a prompt never shows what a tool would not:

- ``rules_for_task``: the project's rules that apply to a task (``query_directives``, logged as
  ``DirectivesServed`` like the tool).
- ``context_for_task``: a context graph for a task (``build_context_graph``, logged as
  ``ContextGraphBuilt``), with the ids to pass on to ``record_decision``.
- ``review_decision_lineage``: a reviewer's brief on one decision: its lineage as steps with
  position, time and actor, and the decision's ``kg://`` page embedded as a resource.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, ParamSpec

from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, EmbeddedResource, TextResourceContents
from pydantic import Field

from kg import browse, lineage
from kg.context import service
from kg.errors import KgError
from kg.rules import service as directives
from kg.validation import bounded
from mcp_server import resources
from mcp_server.state import AppState, KgContext, guard, metadata_of, runtime_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

P = ParamSpec("P")
Task = Annotated[str, Field(min_length=1, max_length=4000, description="The task, in a sentence")]


def _said(
    fn: Callable[P, Awaitable[list[Message]]],
) -> Callable[P, Awaitable[list[Message]]]:
    """The product's own message for a :class:`KgError` (an unknown decision, a refusing
    policy): the SDK would otherwise answer only "Error rendering prompt"."""

    @functools.wraps(fn)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> list[Message]:
        try:
            return await fn(*args, **kwargs)
        except KgError as error:
            raise MCPError(code=INVALID_PARAMS, message=bounded(str(error))) from None

    return wrapper


@_said
async def rules_for_task(
    task: Task,
    ctx: KgContext,
    paths: Annotated[
        str, Field(max_length=4000, description="Files in play, comma-separated (optional)")
    ] = "",
) -> list[Message]:
    files = tuple(p.strip() for p in paths.split(",") if p.strip())
    await guard(ctx, "query_directives")
    served = await directives.query_directives(
        runtime_of(ctx), task=task, paths=files, metadata=metadata_of(ctx)
    )
    return [
        UserMessage(
            f"Task: {task}\n\nThese are this project's rules for the task (served as "
            f"{served.served_id}; each cites its file:line). Follow every MUST; say which "
            f"SHOULD you leave out and why.\n\n{served.checklist}"
        )
    ]


@_said
async def context_for_task(task: Task, ctx: KgContext) -> list[Message]:
    await guard(ctx, "build_context_graph")
    rt = runtime_of(ctx)
    request = service.parse_request(
        anchors=(), task=task, mode="semantic", token_budget=rt.settings.token_budget
    )
    graph = await service.build_context_graph(rt, request, metadata_of(ctx))
    return [
        UserMessage(
            f"Task: {task}\n\nProject context from the knowledge graph (context_graph_id "
            f"{graph.context_graph_id}; pass it to record_decision's context_graph_ids when "
            f"this context informs a decision, and use build_context_graph with anchors for "
            f"more):\n\n{graph.rendering}"
        )
    ]


@_said
async def review_decision_lineage(
    decision_id: Annotated[
        str, Field(min_length=1, max_length=300, description="'decision:...' or its bare id")
    ],
    ctx: KgContext,
) -> list[Message]:
    target = decision_id if decision_id.startswith("decision:") else f"decision:{decision_id}"
    await guard(ctx, "trace_decision_lineage", [target])
    rt = runtime_of(ctx)
    traced = await lineage.trace_decision_lineage(rt, target, "upstream", 3)
    steps = "\n".join(
        f"- {s.kind} {s.id}: {s.label} (position {s.position}, {s.recorded_at}, {s.actor})"
        for s in traced.steps.values()
    )
    links = "\n".join(f"- {k.from_id} -{k.relation}-> {k.to_id}" for k in traced.links)
    page = await browse.render(rt, target, lambda node_id, _t, labels: resources.uri_of(node_id))
    excluded = traced.excluded_by_policy
    return [
        UserMessage(
            "Summarise for a compliance reviewer what informed this decision: what the agent "
            "saw (context graphs and their nodes), where each came from (documents, commits, "
            "ADRs), who recorded each step and when. Cite log positions. Flag gaps: a step "
            "with no source, or nodes withheld by policy."
        ),
        UserMessage(
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri=resources.uri_of(target), mime_type=resources.MARKDOWN, text=page
                ),
            )
        ),
        UserMessage(
            f"Lineage of {target} (upstream, 3 steps; {excluded} withheld by policy):\n"
            f"Steps:\n{steps}\nLinks:\n{links}"
        ),
        AssistantMessage("I will summarise the lineage step by step, citing log positions."),
    ]


def register(server: MCPServer[AppState]) -> None:
    server.prompt(
        "rules_for_task",
        title="Project rules for a task",
        description="The project's rules (AGENTS.md, .cursor/rules, docs/rules, ...) that apply "
        "to a task, as a checklist with file:line sources",
    )(rules_for_task)
    server.prompt(
        "context_for_task",
        title="Context for a task",
        description="A small, policy-filtered context graph for a task, logged for the audit "
        "trail, with its context_graph_id for record_decision",
    )(context_for_task)
    server.prompt(
        "review_decision_lineage",
        title="Review a decision's lineage",
        description="A reviewer's brief: what informed a decision, where it came from, who "
        "recorded each step and when",
    )(review_decision_lineage)
