"""Import statements as written, per language: the module text and the names it binds.

Python ``import a.b as c`` / ``from .a import b as c``; JavaScript and TypeScript
``import x, {a as b}, * as ns from "./m"``; Go ``import alias "path"``; Java
``import a.b.C``; Rust ``use crate::a::{b, c as d}``. Resolution to files is
:mod:`kg.ingest.code.imports`.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from kg.ingest.code.model import ImportRef

Text = Callable[[Node | None], str]


def import_refs(lang: str, node: Node, text: Text) -> list[ImportRef]:
    """The imports one import statement makes, as written (resolved later, lexically)."""
    out: list[ImportRef] = []
    line = node.start_point[0] + 1
    field = node.child_by_field_name
    if lang == "python":
        if node.type == "import_statement":
            for child in node.children_by_field_name("name"):
                if child.type == "aliased_import":
                    module = text(child.child_by_field_name("name"))
                    local = text(child.child_by_field_name("alias"))
                else:
                    module = local = text(child)
                out.append(ImportRef(module, ((local, ""),), line))
            return out
        module = text(field("module_name"))
        names: list[tuple[str, str]] = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                imported = text(child.child_by_field_name("name"))
                names.append((text(child.child_by_field_name("alias")), imported))
            else:
                names.append((text(child), text(child)))
        out.append(ImportRef(module, tuple(names), line))
    elif lang in ("javascript", "typescript", "tsx"):
        source = field("source")
        module = text(source).strip("'\"`")
        names = []
        for clause in (c for c in node.named_children if c.type == "import_clause"):
            for part in clause.named_children:
                if part.type == "identifier":
                    names.append((text(part), "default"))
                elif part.type == "namespace_import":
                    names.append((text(part.named_children[-1]), ""))
                elif part.type == "named_imports":
                    for spec in part.named_children:
                        imported = text(spec.child_by_field_name("name"))
                        alias = text(spec.child_by_field_name("alias")) or imported
                        names.append((alias, imported))
        out.append(ImportRef(module, tuple(names), line))
    elif lang == "go":
        path = text(field("path")).strip('"`')
        local = text(field("name")) or path.rsplit("/", 1)[-1]
        out.append(ImportRef(path, ((local, ""),), line))
    elif lang == "java":
        target = next(
            (c for c in node.named_children if c.type in ("scoped_identifier", "identifier")),
            None,
        )
        module = text(target)
        if module and not any(c.type == "asterisk" for c in node.named_children):
            out.append(
                ImportRef(module, ((module.rsplit(".", 1)[-1], module.rsplit(".", 1)[-1]),), line)
            )
    elif lang == "rust":
        _rust_use(node.child_by_field_name("argument"), "", line, text, out)
    return out


def _rust_use(node: Node | None, prefix: str, line: int, text: Text, out: list[ImportRef]) -> None:
    if node is None:
        return
    if node.type in ("scoped_identifier", "identifier", "crate", "self", "super"):
        path = prefix + text(node)
        out.append(ImportRef(path, ((path.rsplit("::", 1)[-1], path.rsplit("::", 1)[-1]),), line))
    elif node.type == "use_as_clause":
        path = prefix + text(node.child_by_field_name("path"))
        alias = text(node.child_by_field_name("alias"))
        out.append(ImportRef(path, ((alias, path.rsplit("::", 1)[-1]),), line))
    elif node.type == "scoped_use_list":
        base = prefix + text(node.child_by_field_name("path"))
        _rust_use(node.child_by_field_name("list"), base + "::" if base else "", line, text, out)
    elif node.type == "use_list":
        for child in node.named_children:
            _rust_use(child, prefix, line, text, out)
