"""``kg context build|use``: the agent's read path, from the terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from kg.cli.common import allowed, console, err_console, run
from kg.context.request import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_NODES,
    default_mode,
)

if TYPE_CHECKING:
    from kg.context.request import ContextRequest

context_app = typer.Typer(help="Build and use context graphs.", no_args_is_help=True)


@context_app.command("build")
def build(
    anchor: list[str] = typer.Option(
        None,
        "--anchor",
        "-a",
        help="Anchor node (repeatable): an id, a path (docs/prd.md, docs/prd.md#goals, "
        "src/app.py:42), a requirement id (FR1) or an entity name.",
    ),
    task: str = typer.Option(None, "--task", "-t", help="Task text (semantic, policy_first)."),
    mode: str = typer.Option(
        None, help="anchor, semantic or policy_first (default: anchor with anchors, else semantic)."
    ),
    max_nodes: int = typer.Option(DEFAULT_MAX_NODES, help="Node budget."),
    max_depth: int = typer.Option(DEFAULT_MAX_DEPTH, help="Hops from the anchors."),
    max_edges: int = typer.Option(None, help="Edge budget (default: 2 x max nodes)."),
    max_content_chars: int = typer.Option(
        DEFAULT_MAX_CONTENT_CHARS,
        help="Most characters of one node's content (long nodes show matching passages).",
    ),
    token_budget: int = typer.Option(
        None,
        help="Tokens the rendering and the structured result may each take (default: "
        "KG_TOKEN_BUDGET, else 800); raise it for a wider build.",
    ),
    node_type: list[str] = typer.Option(None, "--type", help="Only expand to these node types."),
    edge_type: list[str] = typer.Option(None, "--edge", help="Only follow these edge types."),
    policy: list[str] = typer.Option(None, "--policy", help="Extra policy id to apply."),
    include_superseded: bool = typer.Option(
        True, help="Show superseded/deprecated nodes as such (--no-include-superseded: omit)."
    ),
    session: str = typer.Option(None, help="Session id, recorded with the build."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Build a context graph, log it, and print its Markdown rendering (or JSON)."""
    from kg.cli.inspect_node import resolve_nodes
    from kg.config import Settings
    from kg.context.service import build_context_graph
    from kg.events import EventMetadata
    from kg.host.database import open_runtime

    settings = Settings.from_env()
    anchor = resolve_nodes(anchor, settings.project_root, Path.cwd())
    request = run_parse(
        anchors=anchor or None,
        task=task,
        mode=mode or default_mode(anchor),
        max_nodes=max_nodes,
        max_depth=max_depth,
        max_edges=max_edges,
        max_content_chars=max_content_chars,
        token_budget=token_budget or settings.token_budget,
        node_types=node_type or None,
        edge_types=edge_type or None,
        policies=policy or None,
        include_superseded=include_superseded,
        session_id=session,
    )

    async def go() -> None:
        async with open_runtime() as rt:
            await allowed(rt, "build_context_graph", anchor or ())
            graph = await build_context_graph(
                rt, request, EventMetadata(actor="kg cli", session_id=session)
            )
        if as_json:
            console.print_json(json.dumps(graph.to_dict(), default=str))
            return
        console.print(graph.rendering, markup=False)
        gov = graph.governance
        console.print(
            f"context_graph_id {graph.context_graph_id}; {len(graph.nodes)} nodes, "
            f"{len(graph.edges)} edges, ~{graph.token_estimate} tokens; excluded by policy "
            f"{gov.excluded_count}, redacted {gov.redacted_count}, sensitive {gov.sensitive_count}"
        )
        for warning in graph.warnings:
            err_console.print(f"[bold yellow]warning:[/] {warning}")

    run(go)


def run_parse(**fields: object) -> ContextRequest:
    from kg.context.service import parse_request

    async def go() -> ContextRequest:
        return parse_request(**fields)

    return run(go)


@context_app.command("use")
def use(
    context_graph_id: str = typer.Argument(..., help="The id build printed."),
    tool_call: str = typer.Option(..., "--tool-call", help="Id of the tool call that used it."),
    usage: str = typer.Option("read", help="How it was used (read, edit, ...)."),
    node: list[str] = typer.Option(None, "--node", help="Node actually used (repeatable)."),
) -> None:
    """Record that a tool call used a context graph (ContextGraphUsed)."""
    from kg.context.service import record_context_usage
    from kg.host.database import open_runtime

    async def go() -> None:
        async with open_runtime() as rt:
            await allowed(rt, "record_context_usage", node or ())
            result = await record_context_usage(rt, context_graph_id, tool_call, usage, node or ())
        state = "already recorded" if result.duplicate else "recorded"
        console.print(f"usage {state} at position {result.last_position}")

    run(go)


@context_app.command("node")
def node(
    node_id: str = typer.Argument(..., help="A node id, e.g. from a context graph."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result as JSON."),
) -> None:
    """Print one node in full (a context graph shows only the passages matching its task)."""
    from kg.graph_queries import get_node
    from kg.host.database import open_runtime

    async def go() -> None:
        async with open_runtime() as rt:
            await allowed(rt, "get_node", [node_id])
            found = await get_node(rt, node_id)
        if as_json:
            console.print_json(found.model_dump_json())
            return
        title = found.breadcrumb or found.name
        console.print(f"# {title} ({found.node_id}, {found.node_type})", markup=False)
        console.print(found.content, markup=False)

    run(go)
