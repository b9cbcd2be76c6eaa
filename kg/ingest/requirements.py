"""Requirement ids in prose, the documents that define them, and which definition a mention means.

The grammar. A requirement id is an upper-case *prefix* of one or more dash-joined segments
and a *number* (dotted for sub-requirements), the dash before the number optional:
``FR-001``, ``FR13``, ``NFR-2``, ``SC-001``, ``US1``, ``FR-GH1``, ``PKG-FR-3``, ``FR-13.2``.
Its canonical form is the prefix, a dash and the number with leading zeros removed
(``FR-013``, ``FR13`` -> ``FR-13``; ``FR-GH1`` -> ``FR-GH-1``), so every spelling meets. A
*named* id ends in an upper-case word after a configured kind: ``CORE-FR-LOCK``.

Which ids count. The configured kinds (``requirement_prefixes`` of the schema map, by default
``FR`` and ``NFR``) are requirements wherever they appear, in any case, as before. Any other
prefix must be *defined* as a family: a document states two or more ids of that prefix, at
least two with consecutive numbers (``SC-001``, ``SC-002``), each where a definition stands
(the start of a heading, of a list item or paragraph, bold or in code or not, followed by
``:``, a dash, ``.`` or ``)``, or a table row's first cell). Names of standards and versions
(``UTF-8``, ``SHA-256``, ``ISO-8601``, ``HTTP-2``) are never stated that way, so they never
become requirements; nor do task check-boxes (``- [ ] T001 ...``).

Whose requirement. A requirement belongs to the document that defines it:
``requirement:specs/003-x/spec.md#FR-1`` (:func:`scoped_id`). A mention in that document
points at it; a mention elsewhere points at the one definition nearest the mentioning file
(its own folder first, then each parent folder in turn: a SpecKit run's ``plan.md`` means its
own ``spec.md``'s FR-001, not the thirteen other runs'), and at none when the nearest folder
holding a definition holds several (:meth:`RequirementIndex.targets`). An id of a configured
kind that no document defines keeps the project-wide node ``requirement:FR-1``, as before.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass

DEFAULT_PREFIXES: tuple[str, ...] = ("FR", "NFR")
_NONE: frozenset[str] = frozenset()

_SEGMENT = r"[A-Z]{1,10}"  # letters only: ``FR1-FR15`` is a range, not a scoped id
# The general shape (case-sensitive): an upper-case prefix of 2-10 letters, more segments,
# then the number.
_GENERAL = rf"((?-i:[A-Z]{{2,10}}(?:-{_SEGMENT})*))-?(\d{{1,6}}(?:\.\d{{1,4}})*)"
# Letters, digits and "-" may not touch an id; "_" may (``_FR-1_`` is emphasis).
_BEFORE = r"(?<![^\W_])(?<!-)"
_AFTER = r"(?![^\W_])(?!-)"
# Where a definition stands on a line: after a heading mark, a list mark or nothing, in bold,
# italics or code or not, then a separator.
_OPEN = r"(?:\*\*|__|\*|_|`)?"
_CLOSE = r"(?:\*\*|__|\*|_|`)?"
_SEPARATOR = r"(?:\s*:|\s+[-\u2013\u2014]\s|\s*\.(?:\s|$)|\s*\)|\s+\(|(?-i:\s+[A-Z]))"


@dataclass(frozen=True, slots=True)
class RequirementMatch:
    canonical: str
    raw: str
    start: int = 0


@dataclass(frozen=True, slots=True)
class Definition:
    canonical: str
    raw: str
    line: int  # 1-based line of the source


def scoped_id(relpath: str, canonical: str) -> str:
    """The node id of the requirement ``canonical`` as ``relpath`` defines it."""
    return f"requirement:{relpath}#{canonical}"


def bare_id(canonical: str) -> str:
    """The project-wide node of an id of a configured kind that no document defines."""
    return f"requirement:{canonical}"


def split_id(node_id: str) -> tuple[str | None, str]:
    """``(defining path or None, canonical)`` of a requirement node id."""
    rest = node_id.removeprefix("requirement:")
    path, hash_, canonical = rest.rpartition("#")
    return (path, canonical) if hash_ else (None, rest)


class RequirementMatcher:
    """Finds requirement ids: the configured kinds anywhere (case-insensitive), other ids of
    the grammar's shape only when they are among ``recognised`` (defined as a family)."""

    __slots__ = ("_configured", "_definition", "_general", "_kinds", "_named", "_start", "_table")

    def __init__(self, prefixes: Iterable[str] = DEFAULT_PREFIXES) -> None:
        # Longest prefix first so that e.g. ``NFR`` wins over a hypothetical ``N``.
        ordered = sorted({p.upper() for p in prefixes}, key=lambda p: (-len(p), p))
        self._kinds = frozenset(ordered)
        kinds = "|".join(re.escape(p) for p in ordered) or r"(?!)"
        # A configured kind with optional upper-case scope segments before it and sub-kind
        # segments after it: PKG-FR-3, FR-GH1, FR-013.
        configured = (
            rf"((?-i:(?:{_SEGMENT}-)*)(?:{kinds})(?-i:(?:-[A-Z]{{1,6}})*))-?(\d+(?:\.\d+)*)"
        )
        named = rf"(?-i:((?:{_SEGMENT}-)*(?:{kinds}))-([A-Z]{{3,}}))"
        self._configured = re.compile(_BEFORE + configured + _AFTER, re.IGNORECASE)
        self._named = re.compile(_BEFORE + named + r"(?![^\W_])(?!-)")
        self._general = re.compile(_BEFORE + _GENERAL + _AFTER)
        any_id = rf"(?:{configured}|{named}|{_GENERAL})"
        self._start = re.compile(rf"\s*{_OPEN}{any_id}{_AFTER}", re.IGNORECASE)
        self._definition = re.compile(
            rf"^\s{{0,3}}(?:#{{1,6}}\s+{_OPEN}(?P<id>{any_id}){_AFTER}{_CLOSE}(?:\W|$)"
            rf"|(?:[-*+]\s+|\d{{1,3}}[.)]\s+)?{_OPEN}(?P<item>{any_id}){_AFTER}{_CLOSE}{_SEPARATOR})",
            re.IGNORECASE,
        )
        self._table = re.compile(
            rf"^\s*\|\s*{_OPEN}(?P<id>{any_id}){_AFTER}{_CLOSE}\s*\|(?P<item>)", re.IGNORECASE
        )

    def is_configured(self, canonical: str) -> bool:
        """Whether ``canonical`` is of a configured kind (a requirement even when undefined)."""
        return any(part in self._kinds for part in canonical.split("-"))

    def find(self, text: str, recognised: Container[str] = _NONE) -> Iterator[RequirementMatch]:
        """The ids in ``text``, in order: configured kinds, and ids of the general shape that
        are ``recognised`` (defined as a family somewhere)."""
        found: dict[int, RequirementMatch] = {}
        for match in self._configured.finditer(text):
            found[match.start()] = RequirementMatch(
                _canonical(match.group(1), match.group(2)), match.group(0), match.start()
            )
        for match in self._named.finditer(text):
            if match.start() not in found:
                found[match.start()] = RequirementMatch(
                    match.group(0), match.group(0), match.start()
                )
        if recognised is not _NONE:
            for match in self._general.finditer(text):
                canonical = _canonical(match.group(1), match.group(2))
                if match.start() not in found and canonical in recognised:
                    found[match.start()] = RequirementMatch(
                        canonical, match.group(0), match.start()
                    )
        for start in sorted(found):
            yield found[start]

    def leading(self, text: str, recognised: Container[str] = _NONE) -> RequirementMatch | None:
        """The requirement id a heading starts with (``FR-13: Login`` defines FR-13); an id
        of the general shape only when ``recognised``."""
        match = self._start.match(text)
        if match is None:
            return None
        raw = match.group(0).strip()
        canonical = _from_groups(match.groups())
        if not self.is_configured(canonical) and canonical not in recognised:
            return None
        return RequirementMatch(canonical, raw)

    def definitions(self, source: str) -> list[Definition]:
        """The ids ``source`` (a Markdown file) defines, each with the line of its first
        definition: configured kinds, and the families of other prefixes (see the module's
        docstring); fenced code is skipped."""
        found: list[Definition] = []
        fence: str | None = None
        for number, line in enumerate(source.split("\n"), 1):
            stripped = line.lstrip()
            if stripped.startswith(("```", "~~~")):
                mark = stripped[:3]
                fence = None if fence == mark else (fence or mark)
                continue
            if fence is not None or not stripped:
                continue
            match = self._definition.match(line) or self._table.match(line)
            if match is None:
                continue
            groups = match.groups()
            # the six groups of the id's alternation follow its named group (a heading's, or
            # else a list item's or paragraph's)
            at = 1 if match.group("id") is not None else 8
            canonical = _from_groups(groups[at : at + 6])
            found.append(Definition(canonical, match.group("id") or match.group("item"), number))
        return _families(found, self.is_configured)


def _from_groups(groups: tuple[str | None, ...]) -> str:
    """The canonical id from the alternation's groups: (prefix, number) of the configured
    shape, (prefix, name) of the named one, or (prefix, number) of the general one."""
    configured, number, named, name, general, number2 = groups[:6]
    if configured is not None and number is not None:
        return _canonical(configured, number)
    if named is not None and name is not None:
        return f"{named.upper()}-{name.upper()}"
    assert general is not None and number2 is not None
    return _canonical(general, number2)


def _families(found: list[Definition], is_configured: Callable[[str], bool]) -> list[Definition]:
    """Definitions of configured kinds, and those of prefixes defined as a family: two or
    more, at least two numbered consecutively (``SC-1``, ``SC-2``; never ``SHA-256`` and
    ``SHA-512``)."""
    numbers: defaultdict[str, set[int]] = defaultdict(set)
    for d in found:
        prefix, _, number = d.canonical.rpartition("-")
        if number.split(".")[0].isdigit():
            numbers[prefix].add(int(number.split(".")[0]))
    family = {p for p, ns in numbers.items() if any(n + 1 in ns for n in ns)}
    seen: dict[str, Definition] = {}
    for d in found:
        prefix = d.canonical.rpartition("-")[0]
        if (is_configured(d.canonical) or prefix in family) and d.canonical not in seen:
            seen[d.canonical] = d
    return list(seen.values())


def _prefix(canonical: str) -> str:
    """``FR`` of ``FR-13``, ``PKG-FR`` of ``PKG-FR-3``; a named id is its own family."""
    prefix, _, last = canonical.rpartition("-")
    return prefix if last[:1].isdigit() else canonical


def _canonical(prefix: str, number: str) -> str:
    return f"{prefix.upper()}-{'.'.join(str(int(part)) for part in number.split('.'))}"


class RequirementIndex:
    """Which documents define which requirement ids, project-wide: what a mention in one file
    resolves to (built by the ingest pipeline before parsing; see the module's docstring)."""

    __slots__ = ("_by_id", "_family")

    def __init__(self, definitions: Iterable[tuple[str, str]] = ()) -> None:
        by_id: defaultdict[str, set[str]] = defaultdict(set)
        family: defaultdict[tuple[str, str], int] = defaultdict(int)
        for relpath, canonical in set(definitions):
            by_id[canonical].add(relpath)
            family[relpath, _prefix(canonical)] += 1
        self._by_id = {c: sorted(paths) for c, paths in by_id.items()}
        self._family = dict(family)

    def __contains__(self, canonical: object) -> bool:
        return canonical in self._by_id

    @property
    def recognised(self) -> Mapping[str, list[str]]:
        return self._by_id

    def definers(self, canonical: str) -> list[str]:
        return self._by_id.get(canonical, [])

    def targets(self, canonical: str, relpath: str) -> list[str] | None:
        """The node ids a mention of ``canonical`` in ``relpath`` points at: the definition
        nearest to ``relpath`` (itself, then its folder, then each parent folder); when the
        nearest folder holding definitions holds several: if they are files of one folder,
        the one(s) defining the most ids of the family (a PRD over a story restating three
        of its requirements; a PRD and the epics restating all of it: both), and none
        (``[]``) if they are in several folders (fourteen SpecKit runs' FR-001); None when
        no document defines it."""
        paths = self._by_id.get(canonical)
        if not paths:
            return None
        if relpath in paths:
            return [scoped_id(relpath, canonical)]
        folder = relpath
        while folder:
            folder = folder.rpartition("/")[0]
            under = [p for p in paths if not folder or p.startswith(folder + "/")]
            if len({p.rpartition("/")[0] for p in under}) == 1:
                prefix = _prefix(canonical)
                most = max(self._family[p, prefix] for p in under)
                return [scoped_id(p, canonical) for p in under if self._family[p, prefix] == most]
            if under:
                return []
        return []
