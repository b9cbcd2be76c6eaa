"""A parsed and linked source file as the nodes and edges the ingest diffs and appends.

The file is ``document:{path}`` typed ``File`` (a typed document keeps its id, as a PRD does),
so the Markdown ingest's change detection, ownership and retirement apply unchanged: the file
CONTAINS its top-level symbols, a class its methods and nested classes, and the file owns
every symbol it contains (transitively) and every edge leaving them.

A symbol's content is what an agent reads: the signature, the docstring, then (functions and
methods) the source, which the context builder cuts to the passages that match the task.
A class shows its members' signatures instead of their bodies.
"""

from __future__ import annotations

from typing import Any

from kg.ingest.code.model import CLASS, CODE_LABEL, FILE, CodeFile, Symbol, symbol_id
from kg.ingest.code.resolve import Linked
from kg.parsed.model import (
    CONTAINS,
    DOCUMENT,
    REQUIREMENT,
    ParsedDocument,
    ParsedEdge,
    ParsedNode,
    document_id,
)

MAX_OUTLINE = 60  # member signatures listed in a file's or class's content


def build_document(
    code: CodeFile, linked: Linked, refs: list[str], extra: dict[str, Any] | None = None
) -> ParsedDocument:
    """``refs``: the bare names this file's references use, kept on the File node so a later
    sync knows which unchanged files to re-link when those names appear or disappear."""
    path = code.path
    file_id = document_id(path)
    labels = (DOCUMENT, CODE_LABEL, code.language)
    outline = [s.signature for s in code.symbols if s.kind == CLASS or s.class_name is None]
    content = "\n\n".join(part for part in (code.module_doc, _listing(outline)) if part)
    properties: dict[str, Any] = {
        "path": path,
        "language": code.language,
        "lines": code.line_count,
        "symbols": len(code.symbols),
        "refs": refs,
    }
    if code.package:
        properties["package"] = code.package
    if extra:
        properties.update(extra)
    nodes = [ParsedNode(file_id, FILE, path, content, properties, labels, 1)]
    edges: list[ParsedEdge] = []
    members: dict[str, list[str]] = {}
    classes = {s.qualname for s in code.symbols if s.kind == CLASS}
    for symbol in code.symbols:
        node_id = symbol_id(path, symbol.qualname, symbol.kind)
        nodes.append(_symbol_node(code, symbol, node_id))
        parent, _, _ = symbol.qualname.rpartition(".")
        if parent in classes:  # (a Go or Rust method's type may be declared in another file)
            parent_id = symbol_id(path, parent, CLASS)
            edges.append(ParsedEdge(CONTAINS, parent_id, node_id, {}))
            members.setdefault(parent, []).append(symbol.signature)
        else:
            edges.append(ParsedEdge(CONTAINS, file_id, node_id, {}))
    if members:
        nodes = [_with_members(n, members, path) for n in nodes]
    for req in sorted(linked.requirements):
        canonical = req.split(":", 1)[1]
        nodes.append(ParsedNode(req, REQUIREMENT, canonical, "", {}, (REQUIREMENT,), 1))
    edges += linked.edges
    problems = tuple(code.problems) + tuple(linked.problems)
    return ParsedDocument(path, code.content_hash, tuple(nodes), tuple(edges), problems)


def _symbol_node(code: CodeFile, symbol: Symbol, node_id: str) -> ParsedNode:
    properties: dict[str, Any] = {
        "path": code.path,
        "language": code.language,
        "symbol": symbol.name,
        "start_line": symbol.start_line,
        "end_line": symbol.end_line,
        "signature": symbol.signature,
    }
    if symbol.class_name:
        properties["class_name"] = symbol.class_name
    if symbol.bases:
        properties["bases"] = list(symbol.bases)
    if symbol.kind_detail:
        properties["kind"] = symbol.kind_detail
    parts: tuple[str, ...]
    if not symbol.body:
        parts = (symbol.signature, symbol.docstring)
    elif code.language == "python":  # the docstring is inside the body
        parts = (symbol.body,)
    else:  # the doc comment precedes the signature the body starts with
        parts = (symbol.docstring, symbol.body)
    content = "\n\n".join(p for p in parts if p)
    return ParsedNode(
        node_id,
        symbol.kind,
        symbol.qualname,
        content,
        properties,
        (CODE_LABEL, code.language),
        symbol.start_line,
    )


def _with_members(node: ParsedNode, members: dict[str, list[str]], path: str) -> ParsedNode:
    if node.node_type != CLASS:
        return node
    listed = members.get(node.name)
    if not listed:
        return node
    content = "\n\n".join(p for p in (node.content, _listing(listed)) if p)
    return ParsedNode(
        node.node_id, node.node_type, node.name, content, node.properties, node.labels, node.line
    )


def _listing(signatures: list[str]) -> str:
    shown = signatures[:MAX_OUTLINE]
    more = len(signatures) - len(shown)
    text = "\n".join(f"- {s}" for s in shown)
    return text + (f"\n- ... and {more} more" if more > 0 else "")
