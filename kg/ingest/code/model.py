"""Plain data parsed from one source file: symbols and the references they make, unresolved.

Resolution needs the whole repository (:mod:`kg.ingest.code.resolve`), parsing needs one file,
so a parse stops at names: a call is recorded as the dotted name written at the call site
(``self.repo.save``), an import as the module text and the names it binds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kg.parsed.model import ParseProblem

FILE = "File"
CLASS = "Class"
FUNCTION = "Function"
METHOD = "Method"
CODE_LABEL = "Code"


def symbol_id(relpath: str, qualname: str, kind: str) -> str:
    """``class:src/shop/checkout.py#Checkout`` or ``function:src/shop/checkout.py#Checkout.pay``
    (methods are functions: the id does not change when a function moves into a class)."""
    prefix = "class" if kind == CLASS else "function"
    return f"{prefix}:{relpath}#{qualname}"


@dataclass(frozen=True, slots=True)
class Symbol:
    """A class (or interface, struct, trait, enum), function or method of one file.

    ``class_name`` is the innermost enclosing class (methods) or None; ``bases`` the names
    written as superclasses or implemented interfaces; ``var_types`` the types this callable
    knows its local names by (annotations, ``x = Cls()``) and, for a class, its attributes
    (``self.repo = Repo()``).
    """

    kind: str
    name: str
    qualname: str
    class_name: str | None
    start_line: int
    end_line: int
    signature: str
    docstring: str
    body: str
    bases: tuple[str, ...] = ()
    var_types: tuple[tuple[str, str], ...] = ()
    kind_detail: str = ""  # "interface", "struct", "trait", ... when not a plain class


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call written in ``caller`` (a qualname, or None at module level): ``parts`` is the
    callee's dotted name (``("self", "repo", "save")``), empty when it is not a name at all
    (``f()()``, ``items[0]()``); ``new`` marks ``new X()`` / object creation."""

    caller: str | None
    parts: tuple[str, ...]
    line: int
    new: bool = False


@dataclass(frozen=True, slots=True)
class ImportRef:
    """``module`` as written (``..shop.checkout``, ``./util``, ``a/b/c``, ``a.c.D``) and the
    names it binds here: ``(local, imported)``; ``local`` alone (``imported == ""``) binds the
    module itself (``import shop.checkout as co``)."""

    module: str
    names: tuple[tuple[str, str], ...]
    line: int


@dataclass(frozen=True, slots=True)
class Mention:
    """A requirement id or a spec path named in a comment or docstring of ``owner``."""

    owner: str | None
    target: str  # requirement canonical id (FR-12) or project-relative spec path
    kind: str  # "requirement" or "spec"
    line: int
    raw: str


@dataclass(slots=True)
class CodeFile:
    path: str
    language: str
    content_hash: str
    module_doc: str = ""
    line_count: int = 0
    symbols: list[Symbol] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    imports: list[ImportRef] = field(default_factory=list)
    mentions: list[Mention] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)
    package: str = ""  # Java package / Go package name, as declared
