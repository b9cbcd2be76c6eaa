"""Plain data produced by the Markdown parser: no database, no events.

Node ids follow the graph's ``{type}:{id}`` convention but stay stable when a schema map types a
node: a PRD document is still ``document:docs/prd.md`` with ``node_type="PRD"``, so re-typing a
file never changes its identity in the log.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

# Node ids are at most 1000 characters after the type prefix, with no control characters (see
# kg.events.knowledge); a path this long still leaves room for "#" and a slug.
MAX_PATH = 700
MAX_NAME = 1000
_CONTROL = re.compile(r"[\x00-\x1f]")

DOCUMENT = "Document"
SECTION = "Section"
REQUIREMENT = "Requirement"

CONTAINS = "CONTAINS"
PARENT_OF = "PARENT_OF"
REFERENCES = "REFERENCES"
DEFINES = "DEFINES"


@dataclass(frozen=True, slots=True)
class ParsedNode:
    """A node found in one file; ``line`` is 1-based (the heading line for a section)."""

    node_id: str
    node_type: str
    name: str
    content: str
    properties: dict[str, Any]
    labels: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class ParsedEdge:
    """A directed edge between node ids; the target may live in another file, or nowhere.

    ``weight`` counts occurrences where that means something (a section naming an entity
    three times MENTIONS it with weight 3)."""

    edge_type: str
    from_node: str
    to_node: str
    properties: dict[str, Any]
    weight: float = 1.0


Severity = Literal["error", "warning"]


@dataclass(frozen=True, slots=True)
class ParseProblem:
    """Something wrong with an input file, rendered like a compiler message.

    A ``warning`` (e.g. an ambiguous wiki link that still resolved) does not fail ``kg lint``.
    """

    path: str
    line: int
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class ParsedDocument:
    """Everything parsed from one file.

    ``path`` is the project-relative POSIX path (or the path as given when it lies outside the
    project). ``content_hash`` is the SHA-256 hex digest of the file's text encoded as UTF-8, or
    ``""`` when the file could not be read.
    """

    path: str
    content_hash: str
    nodes: tuple[ParsedNode, ...]
    edges: tuple[ParsedEdge, ...]
    problems: tuple[ParseProblem, ...]

    @property
    def document_id(self) -> str:
        return document_id(self.path)


def document_id(relpath: str) -> str:
    return f"document:{relpath}"


def section_id(relpath: str, anchor: str) -> str:
    return f"section:{relpath}#{anchor}"


def requirement_id(canonical: str) -> str:
    return f"requirement:{canonical}"


def path_id_problem(relpath: str) -> str | None:
    """Why ``relpath`` cannot be part of a node id, or None when it can."""
    if len(relpath) > MAX_PATH:
        return f"path is {len(relpath)} characters long; node ids allow {MAX_PATH}"
    if _CONTROL.search(relpath):
        return "path contains control characters, which node ids do not allow"
    return None
