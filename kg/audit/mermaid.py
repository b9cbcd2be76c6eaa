"""A decision's lineage as a Mermaid flowchart (``kg lineage ID --format mermaid``, the report).

Only what :func:`kg.lineage.trace_decision_lineage` returns is drawn, and that has passed the
policies: a denied node is neither a box nor a label here.
"""

from __future__ import annotations

import re

from kg.lineage import Lineage, LineageStep

_SHAPES = {
    "decision": ('{{"', '"}}'),  # hexagon
    "context_graph": ('[("', '")]'),  # cylinder
    "node": ('["', '"]'),
    "source": ('[/"', '"/]'),
}
_ENTITIES = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "&": "#amp;"}


def _label(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return re.sub(r'["<>#&]', lambda m: _ENTITIES[m.group()], text)


def step_label(step: LineageStep) -> str:
    where = f" · pos {step.position}" if step.position is not None else ""
    if step.kind == "decision":
        return f"{step.id}<br/>{_label(step.label)}{where}"
    if step.kind == "context_graph":
        return f"{_label(step.id)}<br/>{_label(step.label)}{where}"
    return f"{_label(step.id)}<br/>{_label(step.label, 40)}"


def lineage_mermaid(lineage: Lineage) -> str:
    """``flowchart LR`` text: one box per step (shape by kind), one arrow per link."""
    ids = {step_id: f"n{k}" for k, step_id in enumerate(lineage.steps)}
    lines = ["flowchart LR"]
    for step_id, step in lineage.steps.items():
        opening, closing = _SHAPES.get(step.kind, ('["', '"]'))
        # step ids go through _label too: they are text in the box, never Mermaid syntax
        label = step_label(step).replace(step.id, _label(step.id, 200), 1)
        lines.append(f"  {ids[step_id]}{opening}{label}{closing}")
        lines.append(f"  class {ids[step_id]} {step.kind}")
    for link in lineage.links:
        if link.from_id in ids and link.to_id in ids:
            lines.append(f"  {ids[link.from_id]} -->|{link.relation}| {ids[link.to_id]}")
    lines += [
        "  classDef decision fill:#fde68a,stroke:#92400e",
        "  classDef context_graph fill:#bfdbfe,stroke:#1e3a8a",
        "  classDef node fill:#e5e7eb,stroke:#374151",
        "  classDef source fill:#d1fae5,stroke:#065f46",
    ]
    return "\n".join(lines) + "\n"
