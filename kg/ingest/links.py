"""Turning link targets into project-relative node ids.

All resolution is lexical on project-relative POSIX paths (``posixpath``), never on the file
system or the working directory: ``./a.md``, ``a.md`` and ``../docs/a.md`` written in
``docs/b.md`` all become ``docs/a.md``. Nothing is read to resolve a link.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from kg.ingest.code.mentions import CodeNames
from kg.ingest.requirements import RequirementIndex
from kg.ingest.slugs import MAX_SLUG, slugify
from kg.languages import is_source

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdc")  # .mdc: Cursor rules
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class LinkEscapesRoot(ValueError):
    """The link points above the project root."""


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """A resolved internal link: a project-relative file and an optional heading anchor."""

    relpath: str
    anchor: str | None


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def _join(source_relpath: str, target: str) -> str:
    """Resolve ``target`` from the file ``source_relpath``; a leading ``/`` means the root."""
    if target.startswith("/"):
        joined = target.lstrip("/")
    else:
        joined = posixpath.join(posixpath.dirname(source_relpath), target)
    normal = posixpath.normpath(joined) if joined else "."
    if normal == ".." or normal.startswith("../"):
        raise LinkEscapesRoot(target)
    return normal


def resolve_href(source_relpath: str, href: str) -> LinkTarget | None:
    """Resolve a Markdown link destination, or None when it is not a link to a Markdown file
    or a source file (:mod:`kg.languages`).

    External URLs (any ``scheme:`` or ``//host``), links to directories and links to other
    files are ignored. Anchors are lowercased because GitHub slugs always are; a source file's
    anchor (``#L12``, a line) is dropped: the link names the file.

    Raises:
        LinkEscapesRoot: the path climbs above the project root.
    """
    href = href.strip()
    if not href or _SCHEME.match(href) or href.startswith("//"):
        return None
    path, _, fragment = href.partition("#")
    path = unquote(path.partition("?")[0])
    anchor = unquote(fragment).lower()[:MAX_SLUG] or None
    if not path:
        return LinkTarget(source_relpath, anchor) if anchor else None
    if path.endswith("/"):
        return None
    if not is_markdown(path):
        return LinkTarget(_join(source_relpath, path), None) if is_source(path) else None
    return LinkTarget(_join(source_relpath, path), anchor)


class WikiIndex:
    """The project's Markdown files, for resolving ``[[page]]`` by file stem.

    Obsidian-style wiki links name a page by stem (case-insensitive) or by a path. The parser
    sees one file at a time, so the caller supplies the file list; without it a bare
    ``[[page]]`` is taken to be ``page.md`` next to the linking file. ``code`` (optional) is
    the project's source files and symbols, for code named in backticks; ``requirements``
    (optional) which documents define which requirement ids, for the mentions elsewhere.
    """

    __slots__ = ("_by_stem", "_paths", "code", "requirements")

    def __init__(
        self,
        relpaths: Iterable[str],
        code: CodeNames | None = None,
        requirements: RequirementIndex | None = None,
    ) -> None:
        self.code = code
        self.requirements = requirements
        self._paths: set[str] = set()
        by_stem: defaultdict[str, list[str]] = defaultdict(list)
        previous, ordered = "", True
        for relpath in relpaths:
            self._paths.add(relpath)
            # posixpath.splitext(basename) with string methods: a one-file sync indexes every
            # file of the project, and this is several times faster.
            name = relpath.rpartition("/")[2]
            dot = name.rfind(".")
            stem = name[:dot] if dot > 0 and name[:dot].strip(".") else name
            by_stem[stem.casefold()].append(relpath)
            ordered = ordered and previous <= relpath
            previous = relpath
        # A sorted input (discover_markdown's) fills every list in order: sorting 10,000 of
        # them again cost a one-file sync ~0.03 s.
        self._by_stem = (
            dict(by_stem) if ordered else {stem: sorted(paths) for stem, paths in by_stem.items()}
        )

    def __contains__(self, relpath: object) -> bool:
        return relpath in self._paths

    def by_stem(self, stem: str) -> list[str]:
        return self._by_stem.get(stem.casefold(), [])


@dataclass(frozen=True, slots=True)
class WikiResolution:
    target: LinkTarget
    ambiguous: tuple[str, ...] = ()


def resolve_wikilink(
    source_relpath: str, inner: str, index: WikiIndex | None
) -> WikiResolution | None:
    """Resolve the text between ``[[`` and ``]]``; None when it names nothing.

    A page with a ``/`` is a path (``.md`` implied): tried relative to the linking file, then
    to the project root, keeping the first that exists in ``index``. A bare name (with or
    without ``.md``) is a file stem; when several files share it, the one in the linking
    file's folder wins, then the shortest path, then the alphabetically first, and the
    alternatives are reported. The anchor is heading text (``[[page#Heading Text]]``), so it
    is slugified.

    Raises:
        LinkEscapesRoot: the path climbs above the project root.
    """
    page, _, anchor_text = inner.partition("|")[0].partition("#")
    page = page.strip()
    anchor = slugify(anchor_text) or None
    if not page:
        return WikiResolution(LinkTarget(source_relpath, anchor)) if anchor else None
    name = page if is_markdown(page) else f"{page}.md"
    if "/" in page:
        candidates = [_join(source_relpath, name)]
        if not name.startswith(("./", "../")):
            with contextlib.suppress(LinkEscapesRoot):
                candidates.append(_join("", name))
        found = next((c for c in candidates if index is not None and c in index), candidates[0])
        return WikiResolution(LinkTarget(found, anchor))
    stem = posixpath.splitext(name)[0]
    matches = index.by_stem(stem) if index is not None else []
    if not matches:
        return WikiResolution(LinkTarget(_join(source_relpath, name), anchor))
    folder = posixpath.dirname(source_relpath)
    best = min(matches, key=lambda p: (posixpath.dirname(p) != folder, p.count("/"), len(p), p))
    others = tuple(p for p in matches if p != best)
    return WikiResolution(LinkTarget(best, anchor), others)
