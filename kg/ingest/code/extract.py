"""Parsing one source file with tree-sitter into a :class:`~kg.ingest.code.model.CodeFile`.

No database and no other file: definitions, call sites, imports, typed names and comments are
found by one query per language (:mod:`kg.ingest.code.grammar`); nesting is worked out from
byte ranges. Only top-level functions, classes (nested classes too) and their methods become
symbols: a function defined inside another one is part of it, and so are its calls.

A call's receiver is typed where the file says so (``x: Repo``, ``x = Repo()``,
``self.repo = Repo()``, ``new Repo()``), so ``x.save()`` is recorded as ``Repo.save``; an
untyped receiver stays as written and is left unresolved later rather than guessed.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from tree_sitter import Node, QueryCursor

from kg.ingest.code.grammar import GRAMMARS, Grammar, parser, query
from kg.ingest.code.import_syntax import import_refs
from kg.ingest.code.model import (
    CLASS,
    FUNCTION,
    METHOD,
    CallSite,
    CodeFile,
    Mention,
    Symbol,
)
from kg.ingest.requirements import RequirementMatcher
from kg.parsed.model import ParseProblem

MAX_SIGNATURE = 500
MAX_DOCSTRING = 2000
MAX_BODY = 4000
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)+")
_WRAPPERS = frozenset(
    {"Optional", "Union", "None", "null", "undefined", "mut", "const", "dyn", "impl", "readonly"}
)
_SPEC_PATH = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:md|markdown))(#[\w-]+)?", re.I)
_COMMENT_MARK = re.compile(r"^\s*(?:/\*\*?|\*/|\*|///?|//!|#)\s?")


@dataclass(slots=True)
class _Def:
    node: Node
    kind: str  # "class", "function", "impl"
    name: str
    start: int
    end: int
    qualname: str | None = None  # None: not a symbol of its own (nested in a function)
    owner: str | None = None  # the symbol its calls and names count for
    class_name: str | None = None
    receiver: str | None = None  # Go: the receiver variable, which plays "self"
    local_types: dict[str, str] = field(default_factory=dict)
    attr_types: dict[str, str] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)


def parse_source(
    relpath: str, text: str, language: str, requirements: RequirementMatcher
) -> CodeFile:
    """Everything one file defines and refers to; syntax errors become warnings (tree-sitter
    recovers, so the symbols around an error are still found)."""
    data = text.encode("utf-8", "surrogatepass")
    grammar = GRAMMARS[language]
    tree = parser(language).parse(data)
    root = tree.root_node
    result = CodeFile(
        relpath, language, hashlib.sha256(data).hexdigest(), line_count=text.count("\n") + 1
    )
    if root.has_error:
        line, what = _first_error(root)
        result.problems.append(
            ParseProblem(
                relpath, line, f"syntax error ({what}); the rest of the file is kept", "warning"
            )
        )
    captures = QueryCursor(query(language)).matches(root)
    _Extractor(grammar, data, result, requirements, root).run(captures)
    return result


def _first_error(root: Node) -> tuple[int, str]:
    node = root
    while True:
        for child in node.children:
            if child.is_missing:
                return child.start_point[0] + 1, f"missing {child.type!r}"
            if child.type == "ERROR":
                return child.start_point[0] + 1, "unexpected input"
            if child.has_error:
                node = child
                break
        else:
            return node.start_point[0] + 1, "unexpected input"


class _Extractor:
    def __init__(
        self,
        grammar: Grammar,
        data: bytes,
        out: CodeFile,
        requirements: RequirementMatcher,
        root: Node,
    ) -> None:
        self.g = grammar
        self.root = root
        self.by_qualname: dict[str, _Def] = {}
        self.data = data
        self.out = out
        self.requirements = requirements
        self.defs: list[_Def] = []
        self.calls: list[tuple[Node, Node | None, bool]] = []
        self.assigns: list[tuple[Node, Node | None]] = []
        self.params: list[Node] = []
        self.comments: list[Node] = []
        self.impl_traits: dict[str, list[str]] = {}

    def text(self, node: Node | None) -> str:
        if node is None:
            return ""
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    # -- collection ---------------------------------------------------------------------------

    def run(self, matches: list[tuple[int, dict[str, list[Node]]]]) -> None:
        for _, caps in matches:
            name = caps.get("name", [None])[0]
            if "class" in caps:
                self._add_def(caps["class"][0], "class", name)
            elif "function" in caps:
                self._add_def(caps["function"][0], "function", name)
            elif "impl" in caps:
                self._add_impl(caps["impl"][0])
            elif "call" in caps or "new" in caps:
                node = (caps.get("call") or caps["new"])[0]
                self.calls.append((node, caps.get("callee", [None])[0], "new" in caps))
            elif "import" in caps:
                self.out.imports += import_refs(self.g.name, caps["import"][0], self.text)
            elif "assign" in caps:
                self.assigns.append((caps["assign"][0], caps.get("lhs", [None])[0]))
            elif "param" in caps:
                self.params.append(caps["param"][0])
            elif "comment" in caps:
                self.comments.append(caps["comment"][0])
            elif "package" in caps:
                self.out.package = self.text(caps["package"][0].named_children[-1]).strip()
        self._nest()
        self._types()
        self._emit()
        self._calls()
        self._mentions()

    def _add_def(self, node: Node, kind: str, name_node: Node | None) -> None:
        name = self.text(name_node)
        if not name or len(name) > 200 or not name.isprintable() or "#" in name:
            return  # (``"a<tab>b"() {}`` in JavaScript): not a name an id can carry
        d = _Def(node, kind, name, node.start_byte, node.end_byte)
        if node.type == "method_declaration" and self.g.name == "go":
            receiver = node.child_by_field_name("receiver")
            for param in receiver.named_children if receiver else []:
                d.class_name = _type_name(self.text(param.child_by_field_name("type")))
                d.receiver = self.text(param.child_by_field_name("name")) or None
        if kind == "class":
            d.bases = self._bases(node)
        self.defs.append(d)

    def _add_impl(self, node: Node) -> None:
        type_name = _type_name(self.text(node.child_by_field_name("type")))
        if not type_name:
            return
        d = _Def(node, "impl", type_name, node.start_byte, node.end_byte)
        self.defs.append(d)
        trait = _type_name(self.text(node.child_by_field_name("trait")))
        if trait:
            self.impl_traits.setdefault(type_name, []).append(trait)

    def _bases(self, node: Node) -> list[str]:
        found: list[str] = []
        if self.g.name == "python":
            supers = node.child_by_field_name("superclasses")
            for child in supers.named_children if supers else []:
                if child.type in ("identifier", "attribute"):
                    found.append(self.text(child))
            return found
        if self.g.name == "go":
            return found
        for child in node.named_children:
            if child.type in (
                "class_heritage",
                "superclass",
                "super_interfaces",
                "extends_interfaces",
                "extends_type_clause",
            ):
                found += self._type_names(child)
        return found

    def _type_names(self, node: Node) -> list[str]:
        """Names of the types listed under a heritage clause (generic arguments dropped)."""
        if node.type in (
            "identifier",
            "type_identifier",
            "member_expression",
            "nested_identifier",
            "scoped_type_identifier",
        ):
            return [self.text(node)]
        if node.type in ("generic_type",):
            return self._type_names(node.named_children[0]) if node.named_children else []
        if node.type in ("type_arguments", "arguments"):
            return []
        return [n for child in node.named_children for n in self._type_names(child)]

    # -- nesting --------------------------------------------------------------------------------

    def _nest(self) -> None:
        """Give each definition its qualname and owner from the ranges that contain it."""
        self.defs.sort(key=lambda d: (d.start, -d.end))
        stack: list[_Def] = []
        for d in self.defs:
            while stack and stack[-1].end <= d.start:
                stack.pop()
            parent = stack[-1] if stack else None
            if parent is None:
                d.qualname = f"{d.class_name}.{d.name}" if d.class_name else d.name
            elif parent.kind == "impl":
                d.class_name = parent.name
                d.qualname = f"{parent.name}.{d.name}"
            elif parent.kind == "class" and parent.qualname is not None:
                d.qualname = f"{parent.qualname}.{d.name}"
                if d.kind == "function":
                    d.class_name = parent.name
            if d.kind == "impl":
                d.qualname = None
            d.owner = d.qualname if d.qualname is not None else (parent.owner if parent else None)
            if d.qualname is not None:
                self.by_qualname.setdefault(d.qualname, d)
            if d.qualname is None and parent is not None and d.kind != "impl":
                d.receiver = parent.receiver
                d.class_name = parent.class_name
            stack.append(d)

    def _innermost(self, offsets: Iterable[int]) -> list[_Def | None]:
        """For each byte offset (ascending), the innermost definition containing it."""
        found: list[_Def | None] = []
        stack: list[_Def] = []
        i = 0
        for offset in offsets:
            while i < len(self.defs) and self.defs[i].start <= offset:
                while stack and stack[-1].end <= self.defs[i].start:
                    stack.pop()
                stack.append(self.defs[i])
                i += 1
            while stack and stack[-1].end <= offset:
                stack.pop()
            found.append(stack[-1] if stack else None)
        return found

    def _symbol_def(self, d: _Def | None) -> _Def | None:
        """The definition whose symbol ``d`` counts for (itself, or the function around it)."""
        while d is not None and d.qualname is None:
            d = self.by_qualname.get(d.owner) if d.owner else None
        return d

    # -- typed names ----------------------------------------------------------------------------

    def _types(self) -> None:
        items = sorted(
            [(n.start_byte, n, lhs, False) for n, lhs in self.assigns]
            + [(n.start_byte, n, None, True) for n in self.params],
            key=lambda t: t[0],
        )
        owners = self._innermost(t[0] for t in items)
        for (_, node, lhs, is_param), owner in zip(items, owners, strict=True):
            target = self._symbol_def(owner)
            if target is None:
                continue
            for name, type_name, on_self in self._typed_names(node, lhs, is_param, target):
                if not type_name:
                    continue
                if on_self or (target.kind == "class" and node.type != "short_var_declaration"):
                    cls = target if target.kind == "class" else self._class_of(target)
                    if cls is not None:
                        cls.attr_types.setdefault(name, type_name)
                else:
                    target.local_types.setdefault(name, type_name)

    def _class_of(self, d: _Def) -> _Def | None:
        if d.class_name is None:
            return None
        return next((c for c in self.defs if c.kind == "class" and c.name == d.class_name), None)

    def _typed_names(
        self, node: Node, lhs: Node | None, is_param: bool, owner: _Def
    ) -> list[tuple[str, str | None, bool]]:
        """``(name, type, is an attribute of self)`` bound by one assignment or parameter."""
        field = node.child_by_field_name
        kind = node.type
        if is_param:
            if kind in ("typed_parameter",):
                name_node = node.named_children[0] if node.named_children else None
                return [(self.text(name_node), self._annotation(field("type")), False)]
            if kind == "typed_default_parameter":
                return [(self.text(field("name")), self._annotation(field("type")), False)]
            if kind in ("required_parameter", "optional_parameter"):
                type_name = self._annotation(field("type"))
                is_property = any(c.type == "accessibility_modifier" for c in node.named_children)
                out = [(self.text(field("pattern")), type_name, False)]
                return out + (
                    [(self.text(field("pattern")), type_name, True)] if is_property else []
                )
            if kind in ("parameter_declaration", "formal_parameter", "parameter"):
                type_name = self._annotation(field("type"))
                bound = list(node.children_by_field_name("name"))
                pattern = field("pattern")
                if not bound and pattern is not None:
                    bound = [pattern]
                return [(self.text(n), type_name, False) for n in bound]
            return []
        if kind == "assignment":  # Python
            assert lhs is not None
            right = field("right")
            type_name = self._annotation(field("type")) or self._constructed(right)
            if type_name is None and right is not None and right.type == "identifier":
                type_name = owner.local_types.get(self.text(right))  # ``self.repo = repo``
            if lhs.type == "identifier":
                return [(self.text(lhs), type_name, False)]
            obj = lhs.child_by_field_name("object")
            if lhs.type == "attribute" and self.text(obj) in self.g.self_names:
                return [(self.text(lhs.child_by_field_name("attribute")), type_name, True)]
            return []
        if kind == "variable_declarator":
            type_name = self._annotation(field("type")) or self._constructed(field("value"))
            return [(self.text(lhs), type_name, False)]
        if kind == "assignment_expression":
            assert lhs is not None
            if (
                lhs.type == "member_expression"
                and self.text(lhs.child_by_field_name("object")) == "this"
            ):
                prop = self.text(lhs.child_by_field_name("property"))
                right = field("right")
                type_name = self._constructed(right)
                if type_name is None and right is not None and right.type == "identifier":
                    type_name = owner.local_types.get(self.text(right))
                return [(prop, type_name, True)]
            return []
        if kind == "public_field_definition":
            return [(self.text(field("name")), self._annotation(field("type")), True)]
        if kind in ("local_variable_declaration", "field_declaration"):
            type_name = self._annotation(field("type"))
            on_self = kind == "field_declaration"
            return [
                (self.text(d.child_by_field_name("name")), type_name, on_self)
                for d in node.children_by_field_name("declarator")
            ]
        if kind == "let_declaration":
            type_name = self._annotation(field("type")) or self._constructed(field("value"))
            return [(self.text(lhs), type_name, False)]
        if kind == "short_var_declaration":
            left, right = field("left"), field("right")
            if left is None or right is None:
                return []
            declared = [self.text(n) for n in left.named_children]
            values = [self._constructed(v) for v in right.named_children]
            return [(n, v, False) for n, v in zip(declared, values, strict=False)]
        return []

    def _annotation(self, node: Node | None) -> str | None:
        return _type_name(self.text(node)) if node is not None else None

    def _constructed(self, node: Node | None) -> str | None:
        """The class an expression builds: ``Repo()``, ``new Repo()``, ``Repo{}``,
        ``&Repo{}``, ``Repo::new()`` (a capitalised callee only: ``make()`` says nothing)."""
        if node is None:
            return None
        if node.type in ("unary_expression", "await", "await_expression", "reference_expression"):
            inner = node.named_children[-1] if node.named_children else None
            return self._constructed(inner)
        callee: Node | None = None
        if node.type in ("call", "call_expression"):
            callee = node.child_by_field_name("function")
            if callee is not None and callee.type == "scoped_identifier":
                callee = callee.child_by_field_name("path")
        elif node.type in ("new_expression",):
            callee = node.child_by_field_name("constructor")
        elif node.type in ("composite_literal", "struct_expression"):
            callee = node.child_by_field_name("type") or node.child_by_field_name("name")
        if callee is None:
            return None
        parts = self._parts(callee)
        if parts and parts[-1][:1].isupper():
            return parts[-1]
        return None

    # -- symbols --------------------------------------------------------------------------------

    def _emit(self) -> None:
        seen: set[str] = set()
        for d in self.defs:
            if d.qualname is None or d.qualname in seen:
                continue
            seen.add(d.qualname)
            node = d.node
            if d.kind == "class":
                kind = CLASS
                detail = _detail(node)
                bases = d.bases + self.impl_traits.get(d.name, [])
            else:
                kind = METHOD if d.class_name else FUNCTION
                detail, bases = "", []
            body = self._body(node)
            self.out.symbols.append(
                Symbol(
                    kind=kind,
                    name=d.name,
                    qualname=d.qualname,
                    class_name=d.class_name if kind != CLASS else None,
                    start_line=node.start_point[0] + 1,
                    end_line=node.end_point[0] + 1,
                    signature=self._signature(node, body),
                    docstring=self._docstring(node, body),
                    body=self.text(node)[:MAX_BODY] if kind != CLASS else "",
                    bases=tuple(dict.fromkeys(bases)),
                    kind_detail=detail,
                )
            )
        if self.g.name == "python":
            first = self.root.named_children[0] if self.root.named_children else None
            self.out.module_doc = self._string_doc(first)

    def _body(self, node: Node) -> Node | None:
        body = node.child_by_field_name("body")
        if body is None and node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            body = value.child_by_field_name("body") if value is not None else None
        return body

    def _signature(self, node: Node, body: Node | None) -> str:
        start = node.start_byte
        if node.type == "variable_declarator" and node.parent is not None:
            start = node.parent.start_byte
        end = body.start_byte if body is not None else node.end_byte
        text = self.data[start:end].decode("utf-8", "replace")
        if body is None:
            text = text.split("\n", 1)[0]
        elif self.g.name == "python":
            text = text[: text.rfind(":")] if ":" in text else text
        return " ".join(text.split()).rstrip(":{ =>").strip()[:MAX_SIGNATURE]

    def _docstring(self, node: Node, body: Node | None) -> str:
        if self.g.name == "python":
            first = body.named_children[0] if body is not None and body.named_children else None
            return self._string_doc(first)
        anchor = node
        if node.type == "variable_declarator" and node.parent is not None:
            anchor = node.parent
        if anchor.parent is not None and anchor.parent.type in (
            "export_statement",
            "decorated_definition",
        ):
            anchor = anchor.parent
        lines: list[str] = []
        prev = anchor.prev_named_sibling
        line = anchor.start_point[0]
        while (
            prev is not None
            and prev.type in ("comment", "line_comment", "block_comment")
            and prev.end_point[0] >= line - 1
        ):
            lines.insert(0, self.text(prev))
            line = prev.start_point[0]
            prev = prev.prev_named_sibling
        if not lines and body is not None and self.g.name == "go":
            return ""
        return _clean_comment("\n".join(lines))[:MAX_DOCSTRING]

    def _string_doc(self, node: Node | None) -> str:
        if node is not None and node.type == "expression_statement" and node.named_children:
            node = node.named_children[0]
        if node is None or node.type != "string":
            return ""
        parts = [self.text(c) for c in node.named_children if c.type == "string_content"]
        return inspect.cleandoc("".join(parts))[:MAX_DOCSTRING]

    # -- calls ----------------------------------------------------------------------------------

    def _parts(self, node: Node | None) -> tuple[str, ...]:
        if node is None:
            return ()
        if node.type in self.g.name_types:
            return (self.text(node),)
        fields = self.g.dotted_types.get(node.type)
        if fields is None:
            if node.type in ("generic_function", "generic_type") and node.named_children:
                return self._parts(node.named_children[0])
            return ()
        left = node.child_by_field_name(fields[0])
        right = node.child_by_field_name(fields[1])
        if right is None:
            return ()
        head = self._parts(left) if left is not None else ("",)
        if not head and left is not None:  # ``Repo().save()``: the object is a new Repo
            if left.type == "call" and self.text(left.child_by_field_name("function")) == "super":
                return ("super", self.text(right))
            built = self._constructed(left)
            head = (built,) if built else ()
        return (*head, self.text(right)) if head else ()

    def _calls(self) -> None:
        self.calls.sort(key=lambda c: c[0].start_byte)
        owners = self._innermost(c[0].start_byte for c in self.calls)
        for (node, callee, new), owner in zip(self.calls, owners, strict=True):
            if node.type == "method_invocation":  # Java: object.name(...)
                obj = node.child_by_field_name("object")
                name = self.text(node.child_by_field_name("name"))
                parts = (*self._parts(obj), name) if obj is not None else (name,)
                if obj is not None and len(parts) == 1:
                    parts = ()
            else:
                parts = self._parts(callee)
            target = self._symbol_def(owner)
            parts = self._typed(parts, target)
            self.out.calls.append(
                CallSite(target.qualname if target else None, parts, node.start_point[0] + 1, new)
            )

    def _typed(self, parts: tuple[str, ...], caller: _Def | None) -> tuple[str, ...]:
        """Replace a typed receiver by its type: ``x.save`` with ``x: Repo`` is ``Repo.save``."""
        if not parts or caller is None:
            return parts
        head = parts[0]
        if caller.receiver and head == caller.receiver:
            parts = ("self", *parts[1:])
            head = "self"
        if head == "Self" and caller.class_name:
            return (caller.class_name, *parts[1:])
        if len(parts) >= 2 and head in caller.local_types:
            return (*caller.local_types[head].split("."), *parts[1:])
        if len(parts) >= 3 and head in self.g.self_names | {"self"}:
            cls = self._class_of(caller)
            if cls is not None and parts[1] in cls.attr_types:
                return (*cls.attr_types[parts[1]].split("."), *parts[2:])
        if len(parts) >= 2 and head in self.g.self_names:
            return ("self", *parts[1:])
        return parts

    # -- spec mentions --------------------------------------------------------------------------

    def _mentions(self) -> None:
        texts: list[tuple[str | None, str, int]] = []
        owners = self._innermost(c.start_byte for c in self.comments)
        for comment, owner in zip(self.comments, owners, strict=True):
            target = self._symbol_def(owner)
            texts.append(
                (
                    target.qualname if target else None,
                    self.text(comment),
                    comment.start_point[0] + 1,
                )
            )
        for symbol in self.out.symbols:
            if symbol.docstring:
                texts.append((symbol.qualname, symbol.docstring, symbol.start_line))
        if self.out.module_doc:
            texts.append((None, self.out.module_doc, 1))
        for owner_name, text, line in texts:
            for match in self.requirements.find(text):
                self.out.mentions.append(
                    Mention(owner_name, match.canonical, "requirement", line, match.raw)
                )
            for spec in _SPEC_PATH.finditer(text):
                self.out.mentions.append(
                    Mention(owner_name, spec.group(1), "spec", line, spec.group(0))
                )


def _detail(node: Node) -> str:
    kind = node.type
    if kind == "type_spec":
        inner = node.child_by_field_name("type")
        return "interface" if inner is not None and inner.type == "interface_type" else "struct"
    for word in ("interface", "enum", "trait", "struct", "record", "union"):
        if word in kind:
            return word
    return ""


def _type_name(text: str) -> str | None:
    """The one class a type annotation names (``Optional[Repo]``, ``*Repo``, ``&mut Repo``,
    ``"Repo"``), or None for anything else (``list[Order]`` is a list, not an Order)."""
    names: list[str] = [n for n in _IDENT.findall(text) if n not in _WRAPPERS]
    if len(names) > 1 and _DOTTED.fullmatch(text.strip().strip("\"'")):
        return ".".join(names)  # ``co.Checkout``: the class of an imported module
    if len(names) != 1:
        return None
    return names[0]


def _clean_comment(text: str) -> str:
    lines = [
        _COMMENT_MARK.sub("", line).rstrip().removesuffix("*/").rstrip()
        for line in text.splitlines()
    ]
    return "\n".join(line for line in lines if line.strip() not in ("", "*/")).strip()
