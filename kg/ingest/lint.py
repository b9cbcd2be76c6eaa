"""Cross-file checks that one file's parse cannot make: dangling links, duplicate ids."""

from __future__ import annotations

from collections.abc import Iterable

from kg.directives.model import SHARED
from kg.parsed.model import (
    DEFINES,
    REFERENCES,
    REQUIREMENT,
    ParsedDocument,
    ParseProblem,
)
from kg.read.entity_names import ENTITY

_CHECKED_PREFIXES = ("document:", "section:")


def find_dangling(
    docs: Iterable[ParsedDocument], other_files: Iterable[str] = ()
) -> list[ParseProblem]:
    """Problems across all parsed documents of a project, sorted by file and line.

    * a link to a file that was not parsed (``dangling link``), or that was given but could
      not be read;
    * a link to an anchor that no heading of an existing file produces (``dangling anchor``);
    * a node id produced twice (e.g. the same file parsed under two entries);
    * a requirement defined by more than one heading.

    Requirement nodes, shared directives and extracted entities (``apiobject:customer``) are
    shared by design (every mentioning file emits one), so they are not duplicates. Only
    links to documents and sections are checked; ``other_files`` are the
    project's files that exist without being parsed here (source files a spec links to).
    """
    documents = list(docs)
    unreadable = {doc.path for doc in documents if not doc.nodes}
    where: dict[str, tuple[str, int]] = {f"document:{path}": (path, 1) for path in other_files}
    problems: list[ParseProblem] = []
    for doc in documents:
        for node in doc.nodes:
            if _shared(node.node_type, node.labels):
                continue
            first = where.get(node.node_id)
            if first is None:
                where[node.node_id] = (doc.path, node.line)
            else:
                problems.append(
                    ParseProblem(
                        doc.path,
                        node.line,
                        f"duplicate node id {node.node_id} (first at {first[0]}:{first[1]})",
                    )
                )
    definitions: dict[str, tuple[str, int]] = {}
    for doc in documents:
        for edge in doc.edges:
            line = _line(edge.properties)
            if edge.edge_type == DEFINES:
                first = definitions.setdefault(edge.to_node, (doc.path, line))
                if first != (doc.path, line):
                    problems.append(
                        ParseProblem(
                            doc.path,
                            line,
                            f"{edge.to_node} is defined again (first at {first[0]}:{first[1]})",
                        )
                    )
            elif edge.edge_type == REFERENCES and edge.to_node.startswith(_CHECKED_PREFIXES):
                message = _dangling(edge.to_node, edge.properties.get("raw"), where, unreadable)
                if message is not None:
                    problems.append(ParseProblem(doc.path, line, message))
    problems.sort(key=lambda p: (p.path, p.line, p.message))
    return problems


def _shared(node_type: str, labels: tuple[str, ...]) -> bool:
    return node_type == REQUIREMENT or any(x in labels for x in (REQUIREMENT, SHARED, ENTITY))


def _dangling(
    target: str, raw: object, known: dict[str, tuple[str, int]], unreadable: set[str]
) -> str | None:
    if target in known:
        return None
    shown = f" ({raw})" if raw else ""
    if target.startswith("document:"):
        relpath, anchor = target.removeprefix("document:"), ""
    else:
        relpath, _, anchor = target.removeprefix("section:").partition("#")
    if relpath in unreadable:
        return f"link{shown} to {relpath}, which could not be parsed"
    if not anchor or f"document:{relpath}" not in known:
        return f"dangling link{shown}: no file {relpath}"
    return f"dangling anchor{shown}: no heading #{anchor} in {relpath}"


def _line(properties: dict[str, object]) -> int:
    line = properties.get("line")
    return line if isinstance(line, int) else 1
