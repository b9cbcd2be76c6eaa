"""Calls, bases, imports and spec mentions of parsed files turned into edges.

Which functions a call can see is the language's business (a Python module sees its own
top-level names and what it imports; ``self.save`` sees the methods of the caller's class and
its bases; ``repo.save`` with ``repo: Repo`` sees ``Repo``'s); which one of those it means is
decided by the rules shared with the backfill (:mod:`kg.callgraph`). A call that sees nothing
of the repository (a builtin, a library, an untyped receiver) is counted, never guessed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kg.callgraph import CallIndex, Unresolved
from kg.ingest.code.grammar import GRAMMARS
from kg.ingest.code.imports import Bindings
from kg.ingest.code.model import CLASS, CodeFile, Symbol, symbol_id
from kg.parsed.model import ParsedEdge, ParseProblem, document_id, section_id

CALLS = "CALLS"
IMPORTS = "IMPORTS"
INHERITS = "INHERITS"
IMPLEMENTS = "IMPLEMENTS"
REFERENCES = "REFERENCES"
_MAX_CHAIN = 8


@dataclass(frozen=True, slots=True)
class Entry:
    """A symbol as the resolver sees it (parsed now, or read back from the graph)."""

    node_id: str
    name: str
    class_name: str | None
    file_path: str
    kind: str
    bases: tuple[str, ...] = ()

    @property
    def top_level(self) -> bool:
        return self.class_name is None


@dataclass(slots=True)
class CallStats:
    """How the calls of an ingest ended: an edge, or the reason there is none."""

    resolved: int = 0
    external: int = 0  # bound to an import from outside the repository
    unknown: int = 0  # a name the repository does not define (builtins, globals)
    untyped: int = 0  # a receiver whose type the file does not say, or no name at all
    ambiguous: int = 0

    @property
    def unresolved(self) -> int:
        return self.external + self.unknown + self.untyped + self.ambiguous

    def add(self, other: CallStats) -> None:
        for name in ("resolved", "external", "unknown", "untyped", "ambiguous"):
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def summary(self) -> str:
        return (
            f"calls: {self.resolved} resolved, {self.unresolved} unresolved "
            f"({self.external} external, {self.unknown} builtin or unknown, {self.untyped} "
            f"untyped receiver, {self.ambiguous} ambiguous)"
        )


class SymbolIndex:
    """Every symbol of the repository, for calls and bases."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.calls: CallIndex[Entry] = CallIndex()
        self.classes: dict[str, list[Entry]] = {}
        for entry in entries:
            self.add(entry)

    def add(self, entry: Entry) -> None:
        self.calls.add(entry)
        if entry.kind == CLASS:
            self.classes.setdefault(entry.name, []).append(entry)

    def chain(self, type_name: str) -> set[str]:
        """``type_name`` and the names of its bases, transitively."""
        seen = {type_name}
        todo = [type_name]
        while todo and len(seen) < 64:
            for entry in self.classes.get(todo.pop(), []):
                for base in entry.bases:
                    name = base.rsplit(".", 1)[-1]
                    if name not in seen:
                        seen.add(name)
                        todo.append(name)
        return seen


def entries_of(code: CodeFile) -> list[Entry]:
    return [
        Entry(
            symbol_id(code.path, s.qualname, s.kind),
            s.name,
            s.class_name if s.kind != CLASS else _enclosing(s),
            code.path,
            s.kind,
            s.bases,
        )
        for s in code.symbols
    ]


def _enclosing(symbol: Symbol) -> str | None:
    """A nested class is scoped by its outer class (``Outer.Inner``), a top-level one by none."""
    head, _, _ = symbol.qualname.rpartition(".")
    return head.rsplit(".", 1)[-1] if head else None


@dataclass(slots=True)
class Linked:
    edges: list[ParsedEdge] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    stats: CallStats = field(default_factory=CallStats)
    requirements: set[str] = field(default_factory=set)


class Linker:
    """Links one parsed file against the repository's symbols, files and specs."""

    def __init__(
        self,
        code: CodeFile,
        index: SymbolIndex,
        imports: Bindings,
        specs: set[str],
    ) -> None:
        self.code = code
        self.index = index
        self.imports = imports
        self.specs = specs
        self.grammar = GRAMMARS[code.language]
        self.by_qualname = {s.qualname: s for s in code.symbols}
        self.out = Linked()
        self._edges: dict[tuple[str, str, str], ParsedEdge] = {}
        self.dir = posixpath.dirname(code.path)

    def run(self) -> Linked:
        file_id = document_id(self.code.path)
        for target, module in sorted(self.imports.files.items()):
            if target != self.code.path:
                self._edge(IMPORTS, file_id, document_id(target), module)
        for call in self.code.calls:
            self._call(call.caller, call.parts, call.line, call.new)
        for symbol in self.code.symbols:
            if symbol.kind == CLASS:
                for base in symbol.bases:
                    self._base(symbol, base)
        for mention in self.code.mentions:
            self._mention(mention.owner, mention.target, mention.kind, mention.line, mention.raw)
        self.out.edges = list(self._edges.values())
        return self.out

    def _edge(self, edge_type: str, source: str, target: str, raw: str) -> None:
        key = (edge_type, source, target)
        if key not in self._edges:
            self._edges[key] = ParsedEdge(edge_type, source, target, {"raw": raw[:200]})

    def _owner_id(self, qualname: str | None) -> str:
        symbol = self.by_qualname.get(qualname) if qualname else None
        if symbol is None:
            return document_id(self.code.path)
        return symbol_id(self.code.path, symbol.qualname, symbol.kind)

    # -- calls ----------------------------------------------------------------------------

    def _call(self, caller: str | None, parts: tuple[str, ...], line: int, new: bool) -> None:
        stats = self.out.stats
        symbol = self.by_qualname.get(caller) if caller else None
        caller_class = symbol.class_name if symbol is not None else None
        plan = self._plan(parts, caller_class, new)
        if isinstance(plan, str):
            setattr(stats, plan, getattr(stats, plan) + 1)
            return
        callee, visible, here = plan
        found = self.index.calls.resolve(callee, caller_class, here, visible)
        if isinstance(found, Unresolved):
            if found.kind == "ambiguous":
                stats.ambiguous += 1
                self.out.problems.append(
                    ParseProblem(
                        self.code.path,
                        line,
                        found.message.replace("unresolved call", "call left unlinked"),
                        "warning",
                    )
                )
            else:
                stats.unknown += 1
            return
        stats.resolved += 1
        self._edge(CALLS, self._owner_id(caller), found.node_id, ".".join(parts))

    def _plan(
        self, parts: tuple[str, ...], caller_class: str | None, new: bool
    ) -> tuple[str, Callable[[Entry], bool], tuple[str, ...]] | str:
        """What the resolver is asked (callee, what it may see, where first), or the name of
        the counter that explains why it is not asked."""
        if not parts or not all(parts):
            return "untyped"
        own = (self.code.path,)
        head, name = parts[0], parts[-1]
        if len(parts) == 1:
            return self._bare(name, caller_class, new)
        if head == "self" and len(parts) == 2:
            if caller_class is None:
                return "untyped"
            chain = self.index.chain(caller_class)
            return f"self.{name}", lambda e: e.class_name in chain, own
        if head == "super" and len(parts) == 2 and caller_class:
            chain = self.index.chain(caller_class) - {caller_class}
            return name, lambda e: e.class_name in chain, own
        for k in range(len(parts) - 1, 0, -1):
            files = self.imports.modules.get(".".join(parts[:k]))
            if files is None:
                continue
            rest = parts[k:]
            if len(rest) == 1:
                return name, _top_level_in(files), files
            if len(rest) == 2:
                return self._typed(rest[0], name, files)
            return "untyped"
        if len(parts) == 2:
            imported = self.imports.names.get(head)
            if imported is not None:
                return self._typed(imported[1], name, imported[0])
            if head in self.imports.external:
                return "external"
            if head in self.index.classes:
                return self._typed(head, name, own)
            if head[:1].isupper():
                return "external"  # a type the repository does not define
        return "untyped"

    def _typed(
        self, type_name: str, name: str, files: tuple[str, ...]
    ) -> tuple[str, Callable[[Entry], bool], tuple[str, ...]] | str:
        if type_name not in self.index.classes:
            return "external"
        chain = self.index.chain(type_name)
        return f"{type_name}.{name}", lambda e: e.class_name in chain, files

    def _bare(
        self, name: str, caller_class: str | None, new: bool
    ) -> tuple[str, Callable[[Entry], bool], tuple[str, ...]] | str:
        own = (self.code.path,)
        path = self.code.path
        lang = self.code.language
        if lang == "java" and not new:
            if caller_class is None:
                return "unknown"
            chain = self.index.chain(caller_class)
            return f"this.{name}", lambda e: e.class_name in chain, own
        if lang == "go":
            folder = self.dir
            return (
                name,
                lambda e: e.top_level and posixpath.dirname(e.file_path) == folder,
                own,
            )
        if not self.grammar.module_scoped or lang == "java":
            return name, lambda e: e.kind == CLASS, own
        if any(
            s.name == name and s.class_name is None and "." not in s.qualname
            for s in self.code.symbols
        ):
            return name, lambda e: e.top_level and e.file_path == path, own
        imported = self.imports.names.get(name)
        if imported is not None:
            files, real = imported
            where = set(files)
            return real, lambda e: e.top_level and e.file_path in where, files
        if name in self.imports.external or name in self.imports.modules:
            return "external"
        return "unknown"

    # -- bases ----------------------------------------------------------------------------

    def _base(self, symbol: Symbol, base: str) -> None:
        """``class Checkout(Base)``: the class ``Base`` names where the file can see it."""
        parts = tuple(base.replace("::", ".").split("."))
        name = parts[-1]
        files: tuple[str, ...] | None = (self.code.path,)
        if len(parts) == 1 and name in self.imports.names:
            files, name = self.imports.names[name]
        elif (
            len(parts) == 1
            and self.grammar.module_scoped
            and not any(s.kind == CLASS and s.name == name for s in self.code.symbols)
        ):
            return  # neither defined here nor imported: a builtin (``Exception``)
        elif len(parts) > 1:
            files = self.imports.modules.get(".".join(parts[:-1]))
        if parts[0] in self.imports.external or files is None:
            return
        found = self.index.calls.resolve(name, None, files, lambda e: e.kind == CLASS)
        source = symbol_id(self.code.path, symbol.qualname, symbol.kind)
        if not isinstance(found, Unresolved) and found.node_id != source:
            self._edge(INHERITS, source, found.node_id, base)

    # -- specs ----------------------------------------------------------------------------

    def _mention(self, owner: str | None, target: str, kind: str, line: int, raw: str) -> None:
        source = self._owner_id(owner)
        if kind == "requirement":
            req = f"requirement:{target}"
            self.out.requirements.add(req)
            self._edge(IMPLEMENTS, source, req, raw)
            return
        path = _spec_path(self.dir, target, self.specs)
        if path is None:
            return  # a path in a comment is often an example: only existing specs are linked
        anchor = raw.partition("#")[2].lower()
        self._edge(
            REFERENCES, source, section_id(path, anchor) if anchor else document_id(path), raw
        )


def _top_level_in(files: tuple[str, ...]) -> Callable[[Entry], bool]:
    where = set(files)
    return lambda e: e.top_level and e.file_path in where


def _spec_path(folder: str, target: str, specs: set[str]) -> str | None:
    for candidate in (posixpath.normpath(posixpath.join(folder, target)), target.lstrip("/")):
        if candidate in specs:
            return candidate
    return None
