"""``kg lint``: directives that contradict each other.

Two MUST directives conflict when they have the same scope (globs, layers, languages,
frameworks), the same subject (the statement without its modal and negation words,
:func:`kg.directives.parse.subject_of`) and one is negated ("must not", "never") while the
other is not. Each is reported at its own file:line, naming the other's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kg.directives.model import DIRECTIVE
from kg.parsed.model import ParsedDocument, ParseProblem


def _scope(properties: dict[str, Any]) -> tuple[tuple[str, ...], ...]:
    return tuple(
        tuple(sorted(str(v) for v in properties.get(key) or ()))
        for key in ("globs", "layers", "languages", "frameworks")
    )


def find_conflicts(docs: Iterable[ParsedDocument]) -> list[ParseProblem]:
    groups: dict[tuple[Any, ...], list[tuple[str, int, bool, str]]] = {}
    for doc in docs:
        for node in doc.nodes:
            p = node.properties
            if node.node_type != DIRECTIVE or p.get("strength") != "MUST" or not p.get("subject"):
                continue
            key = (p["subject"], _scope(p))
            groups.setdefault(key, []).append(
                (doc.path, node.line, bool(p.get("negated")), node.content)
            )
    problems: list[ParseProblem] = []
    for items in groups.values():
        yes = [i for i in items if not i[2]]
        no = [i for i in items if i[2]]
        for a in yes:
            for b in no:
                problems.append(_problem(a, b))
                problems.append(_problem(b, a))
    return problems


def _problem(at: tuple[str, int, bool, str], other: tuple[str, int, bool, str]) -> ParseProblem:
    return ParseProblem(
        at[0],
        at[1],
        f"conflicting directives: MUST {'NOT ' if at[2] else ''}here and MUST "
        f"{'NOT ' if other[2] else ''}at {other[0]}:{other[1]} on the same subject and scope; "
        "keep one of them",
    )
