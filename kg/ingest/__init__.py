"""Spec ingestion, parsing half: Markdown files to plain nodes, edges and problems.

Nothing here touches the database or appends events; the command layer turns a
:class:`ParsedDocument` into events.
"""

from kg.ingest.files import project_relpath, read_markdown_file
from kg.ingest.links import WikiIndex
from kg.ingest.lint import find_dangling
from kg.ingest.markdown import parse_markdown, parse_text
from kg.ingest.model import ParsedDocument, ParsedEdge, ParsedNode, ParseProblem
from kg.ingest.project import discover_markdown, parse_project
from kg.ingest.schema_map import DEFAULT_SCHEMA, SchemaMap, load_schema_map

__all__ = [
    "DEFAULT_SCHEMA",
    "ParseProblem",
    "ParsedDocument",
    "ParsedEdge",
    "ParsedNode",
    "SchemaMap",
    "WikiIndex",
    "discover_markdown",
    "find_dangling",
    "load_schema_map",
    "parse_markdown",
    "parse_project",
    "parse_text",
    "project_relpath",
    "read_markdown_file",
]
