"""Code named in specs: ``src/shop/checkout.py`` or ``Checkout.pay`` in backticks.

A Markdown section that names a source file or a symbol in inline code gets a REFERENCES
edge to it. Symbols are named by qualified name (``Checkout.pay``, ``Checkout``), optionally
with ``()``; a name several symbols share is reported, not linked. Bare lowercase words are
not looked up: ``save`` in prose is a word, not a reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kg.languages import is_source

_SPAN = re.compile(r"`([^`\n]{2,200})`")
_QUALIFIED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_PATH = re.compile(r"^(?:\./)?([\w.@-]+(?:/[\w.@-]+)*)(?::\d+)?$")


def named_in(texts: Iterable[str]) -> set[str]:
    """The bare names inline code in ``texts`` could refer to (``pay`` of ``Checkout.pay``),
    so only those symbols are read from the graph."""
    names: set[str] = set()
    for text in texts:
        for match in _SPAN.finditer(text):
            tail = match.group(1).strip().removesuffix("()").rpartition("#")[2]
            last = tail.rpartition(".")[2]
            if _QUALIFIED.match(last):
                names.add(last)
    return names


@dataclass(frozen=True, slots=True)
class CodeMention:
    raw: str
    offset: int
    targets: tuple[str, ...]  # one: link it; several: ambiguous; none: not code


class CodeNames:
    """Source files and symbols by qualified name, for the Markdown parser (picklable)."""

    __slots__ = ("_paths", "_symbols")

    def __init__(self, paths: Iterable[str], symbol_ids: Iterable[str]) -> None:
        self._paths = frozenset(paths)
        symbols: dict[str, list[str]] = {}
        for node_id in symbol_ids:
            qualname = node_id.partition("#")[2]
            if qualname:
                symbols.setdefault(qualname, []).append(node_id)
        self._symbols = {k: tuple(sorted(v)) for k, v in symbols.items()}

    def __bool__(self) -> bool:
        return bool(self._paths or self._symbols)

    def find(self, text: str) -> Iterator[CodeMention]:
        for match in _SPAN.finditer(text):
            span = match.group(1).strip()
            targets = self._lookup(span)
            if targets:
                yield CodeMention(span, match.start(), targets)

    def _lookup(self, span: str) -> tuple[str, ...]:
        if "#" in span:  # ``src/shop/checkout.py#Checkout.pay``
            path_part, _, name_part = span.partition("#")
            ids = self._symbols.get(name_part.removesuffix("()"), ())
            return tuple(i for i in ids if i.partition(":")[2].startswith(path_part + "#"))
        path = _PATH.match(span)
        if path is not None and is_source(path.group(1)):
            found = path.group(1)
            return (f"document:{found}",) if found in self._paths else ()
        name = span.removesuffix("()")
        if not _QUALIFIED.match(name):
            return ()
        if "." not in name and not name[:1].isupper():
            return ()  # a bare lowercase word: prose, not a reference
        return self._symbols.get(name, ())
