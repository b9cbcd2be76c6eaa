"""The compact Markdown an agent puts in its prompt, and its token estimate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kg.context.result import ContextEdge, ContextNode

SNIPPET_CHARS = 400


def estimate_tokens(text: str) -> int:
    """Characters / 4: close enough for budgeting, and needs no tokenizer download."""
    return (len(text) + 3) // 4


def node_line(node: ContextNode) -> str:
    if node.redacted:
        return f"- **{node.node_id}** ({node.node_type}) [redacted by policy]"
    snippet = " ".join(node.content.split())
    if len(snippet) > SNIPPET_CHARS:
        snippet = snippet[: SNIPPET_CHARS - 1] + "…"
    body = f"{node.name}: {snippet}" if snippet else node.name
    return f"- **{node.node_id}** ({node.node_type}; {node.reason}) {body}"


def edge_line(edge: ContextEdge) -> str:
    return f"- {edge.from_node} -{edge.edge_type}-> {edge.to_node}"


def render(
    mode: str,
    as_of: int,
    nodes: Sequence[ContextNode],
    edges: Sequence[ContextEdge],
    allowed_actions: dict[str, dict[str, Any]],
) -> str:
    lines = [f"# Context graph ({mode}, log position {as_of}, {len(nodes)} nodes)"]
    if allowed_actions:
        lines.append("## Allowed actions")
        for policy_id, grant in sorted(allowed_actions.items()):
            actions = ", ".join(grant["actions"])
            lines.append(f"- {policy_id}: {actions} (on {len(grant['nodes'])} nodes)")
    lines.append("## Nodes")
    lines.extend(node_line(n) for n in nodes)
    if edges:
        lines.append("## Edges")
        lines.extend(edge_line(e) for e in edges)
    return "\n".join(lines) + "\n"
