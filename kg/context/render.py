"""The compact Markdown an agent puts in its prompt, and its token estimate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kg.context.result import ContextEdge, ContextNode, type_in_id

MORE_HINT = "_… = passages of a longer text: get_node(id) returns all of it._"
# ...when some nodes are pointers (a further match shown without text, kg.context.fit)
POINTER_HINT = (
    "_… = passages of a longer text; a node without text is a further match:"
    " get_node(id) returns either._"
)


def estimate_tokens(text: str) -> int:
    """Characters / 4: close enough for budgeting, and needs no tokenizer download."""
    return (len(text) + 3) // 4


def node_line(node: ContextNode) -> str:
    """One node on one line: its id, type and reason, where it sits, and its content (already
    cut to the passages that match the task; never cut again here)."""
    kind = "" if type_in_id(node) else f"{node.node_type}; "  # the id says it: not repeated
    if node.redacted:
        shown = f" ({node.node_type})" if kind else ""
        return f"- **{node.node_id}**{shown} [redacted by policy]"
    title = f"{node.breadcrumb} > {node.name}" if node.breadcrumb else node.name
    if node.status:
        named = node.superseded_by or _named_successor(node)
        mark = f"superseded by {', '.join(named)}" if named else node.status
        return f"- **{node.node_id}** ({kind}{node.reason}) {title} [{mark}]"
    text = " ".join(node.content.split())
    if node.copies:
        title += f" (also in {', '.join(node.copies)})"
    body = f"{title}: {text}" if text else title
    return f"- **{node.node_id}** ({kind}{node.reason}) {body}"


def _named_successor(node: ContextNode) -> tuple[str, ...]:
    """A successor the node's own (visible) properties name in words (``ADR-7``), when it is
    not a node of the graph."""
    text = node.properties.get("superseded_by")
    return (text,) if isinstance(text, str) and ":" not in text else ()


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
    if any(n.partial and not n.content and not n.status for n in nodes):
        lines.append(POINTER_HINT)
    elif any(n.partial for n in nodes):
        lines.append(MORE_HINT)
    return "\n".join(lines) + "\n"
