"""Spec ingestion: Markdown files to nodes, edges and problems, and from there to events.

The names exported here are the parsing half, which touches no database (the pre-commit hook
imports only this half). The writing half lives in :mod:`kg.ingest.service` (``ingest_paths``,
``sync_project``, ``lint_project``), built on :mod:`kg.ingest.pipeline` (read, skip unchanged,
parse, diff against the graph, append), :mod:`kg.ingest.diff` (pure) and
:mod:`kg.ingest.state` (batched reads of what the graph holds).
"""

from kg.ingest.files import project_relpath, read_markdown_file
from kg.ingest.links import WikiIndex
from kg.ingest.lint import find_dangling
from kg.ingest.markdown import parse_markdown, parse_text
from kg.ingest.project import discover_markdown, parse_project
from kg.ingest.schema_map import DEFAULT_SCHEMA, SchemaMap, load_schema_map
from kg.parsed.model import ParsedDocument, ParsedEdge, ParsedNode, ParseProblem

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
