"""The ingest hook: a rule file's parse gains a ``Directive`` node per rule statement.

Called once per parsed file by :func:`kg.ingest.markdown.parse_text`. A rule file is one the
schema map types ``Rule`` (by default ``**/rules/*.md``) or one of the files agents read for
their rules (:data:`RULE_FILES`). Its document CONTAINS its directives, so ingestion owns them
like sections (re-ingesting the file retires the statements it no longer has); the document
is ABOUT its statements' topics, APPLIES_TO their layers and AUTHORITATIVE_FOR the topics its
Metadata names. Topic and layer nodes are shared by every rule file (label
``Shared``), like requirement nodes.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from typing import Any

from kg.directives.config import DirectiveConfig
from kg.directives.files import is_rule_path
from kg.directives.model import (
    ABOUT,
    APPLIES_TO,
    AUTHORITATIVE_FOR,
    DIRECTIVE,
    LAYER,
    SHARED,
    TOPIC,
    WILDCARD,
    ParsedDirective,
    when_texts,
)
from kg.directives.parse import parse_rule_file
from kg.directives.topics import topics_of
from kg.parsed.front_matter import FrontMatterError, parse_front_matter
from kg.parsed.model import CONTAINS, ParsedDocument, ParsedEdge, ParsedNode, ParseProblem

RULE_TYPE = "Rule"
MAX_NAME = 200
NESTED_GUIDES = frozenset({"AGENTS.md", "CLAUDE.md"})


def with_directives(doc: ParsedDocument, source: str, config: DirectiveConfig) -> ParsedDocument:
    """``doc`` plus the directives of the rule file it is (unchanged when it is none)."""
    if not doc.nodes or not (doc.nodes[0].node_type == RULE_TYPE or is_rule_path(doc.path)):
        return doc
    front_matter, problem = _front_matter(doc.path, source)
    if problem is not None:
        return replace(doc, problems=(*doc.problems, problem))
    parsed = parse_rule_file(doc.path, source, front_matter, config)
    folder = posixpath.dirname(doc.path)
    if folder and posixpath.basename(doc.path) in NESTED_GUIDES:
        # A nested AGENTS.md governs its own folder: its unscoped statements get that scope.
        parsed.directives = [
            d
            if d.meta.scope.globs
            else replace(
                d, meta=replace(d.meta, scope=replace(d.meta.scope, globs=(f"{folder}/**",)))
            )
            for d in parsed.directives
        ]
    nodes: list[ParsedNode] = []
    edges: list[ParsedEdge] = []
    shared: dict[str, ParsedNode] = {}
    topics: set[str] = set()
    layers: set[str] = set()
    for directive in parsed.directives:
        nodes.append(_node(doc.path, directive, config))
        edges.append(ParsedEdge(CONTAINS, doc.document_id, directive.node_id, {}))
        topics.update(directive.meta.topics)
        layers.update(layer for layer in directive.meta.scope.layers if layer != WILDCARD)
    # Topic and layer edges leave the rule file, not each statement: a directive's own
    # topics are in its properties, and a file's handful of edges keep ingest at thousands
    # of directives a second (bench/RESULTS.md).
    doc_id = doc.document_id
    for topic in sorted(topics):
        edges.append(ParsedEdge(ABOUT, doc_id, _shared(shared, TOPIC, topic), {}))
    for layer in sorted(layers):
        edges.append(ParsedEdge(APPLIES_TO, doc_id, _shared(shared, LAYER, layer), {}))
    if parsed.directives:
        for topic in parsed.meta.authoritative_for:
            target = _shared(shared, TOPIC, topic)
            edges.append(ParsedEdge(AUTHORITATIVE_FOR, doc_id, target, {}))
    return replace(
        doc,
        nodes=(*doc.nodes, *nodes, *shared.values()),
        edges=(*doc.edges, *edges),
        problems=(*doc.problems, *parsed.problems),
    )


def _front_matter(relpath: str, source: str) -> tuple[dict[str, Any], ParseProblem | None]:
    """The file's front matter; a malformed one skips the file's directives (the document
    parser reports the YAML error itself, at its line)."""
    lines = source.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return {}, None
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
    if end is None:
        return {}, ParseProblem(relpath, 1, "front matter is never closed; its rules were skipped")
    try:
        return parse_front_matter("\n".join(lines[1:end]) + "\n"), None
    except FrontMatterError as error:
        return {}, ParseProblem(
            relpath, error.line + 2, "malformed front matter: the rules in this file were skipped"
        )


def _shared(found: dict[str, ParsedNode], node_type: str, name: str) -> str:
    node_id = f"{node_type.lower()}:{name}"
    if node_id not in found:
        found[node_id] = ParsedNode(node_id, node_type, name, "", {}, (SHARED,), 1)
    return node_id


def _node(relpath: str, d: ParsedDirective, config: DirectiveConfig) -> ParsedNode:
    meta, scope = d.meta, d.meta.scope
    when = when_texts(meta.conditions, d.section, meta.description)
    # Per condition, joined: "database performance" for "a query or a cache".
    condition_topics = [" ".join(topics_of([text], config)) for text in when]
    properties: dict[str, Any] = {
        "strength": d.strength,
        "negated": d.negated,
        "source": f"{relpath}:{d.line}",
        "line": d.line,
        "file": relpath,
        "section": d.section,
        "globs": list(scope.globs),
        "layers": list(scope.layers),
        "languages": list(scope.languages),
        "frameworks": list(scope.frameworks),
        "topics": list(meta.topics),
        "authoritative_for": list(meta.authoritative_for),
        "conditions": list(meta.conditions),
        "description": meta.description,
        "condition_topics": list(condition_topics),
        "severity": meta.severity,
        "always_apply": meta.always_apply,
        "subject": d.subject,
        "rule_file": posixpath.basename(relpath),
    }
    name = d.text if len(d.text) <= MAX_NAME else d.text[: MAX_NAME - 1] + "…"
    return ParsedNode(d.node_id, DIRECTIVE, name, d.text, properties, (DIRECTIVE,), d.line)
