"""Markdown file -> Document, Section and Requirement nodes and their edges.

The structure comes from markdown-it tokens (so a ``#`` line inside a code block is not a
heading); regular expressions are used only for slugs and for requirement ids in the source of
inline runs (paragraphs, headings, table cells; never code blocks). One pass over the token
stream, with each section's text sliced from the source by the token line maps, keeps the work
linear in the size of the file.
"""

from __future__ import annotations

import hashlib
import posixpath
from bisect import bisect_right
from collections.abc import Container
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markdown_it.token import Token

from kg.ingest.entities.extract import EntityScanner
from kg.ingest.files import DEFAULT_MAX_BYTES, project_relpath, read_markdown_file
from kg.ingest.links import (
    LinkEscapesRoot,
    LinkTarget,
    WikiIndex,
    resolve_href,
    resolve_wikilink,
)
from kg.ingest.mdit import FRONT_MATTER, UNCLOSED_FLAG, WIKILINK, markdown_parser
from kg.ingest.requirements import (
    Definition,
    RequirementIndex,
    RequirementMatch,
    bare_id,
    scoped_id,
)
from kg.ingest.schema_map import LABEL, LABEL_RULE, SchemaMap, load_schema_map
from kg.ingest.slugs import Slugger
from kg.ingest.status import front_matter_status, status_line
from kg.parsed.front_matter import FrontMatterError, parse_front_matter
from kg.parsed.model import (
    CONTAINS,
    DEFINES,
    DOCUMENT,
    MAX_NAME,
    PARENT_OF,
    REFERENCES,
    REQUIREMENT,
    SECTION,
    ParsedDocument,
    ParsedEdge,
    ParsedNode,
    ParseProblem,
    Severity,
    document_id,
    path_id_problem,
    section_id,
)
from kg.validation import clip


def parse_markdown(
    root: Path,
    path: Path,
    text: str | None = None,
    schema: SchemaMap | None = None,
    *,
    wiki_index: WikiIndex | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ParsedDocument:
    """Parse one Markdown file of the project rooted at ``root``.

    ``path`` may be absolute or relative to ``root`` (not to the working directory). When
    ``text`` is None the file is read with :func:`read_markdown_file`; a file that cannot be
    read gives a document with no nodes and one problem. ``schema`` defaults to the project's
    schema map (:func:`load_schema_map`); pass it explicitly when parsing many files.
    ``wiki_index`` lets ``[[page]]`` resolve by file stem across the project.

    Raises:
        ValidationError: only when ``schema`` is None and the project's schema map is
            malformed; problems with the Markdown file itself never raise.
    """
    relpath = project_relpath(root, path)
    if relpath is None:
        problem = ParseProblem(str(path), 1, f"refused: {path} is outside the project root {root}")
        return ParsedDocument(str(path), "", (), (), (problem,))
    if text is None:
        text, read_problem = read_markdown_file(root, path, max_bytes)
        if text is None:
            assert read_problem is not None
            return ParsedDocument(relpath, "", (), (), (read_problem,))
    if schema is None:
        schema = load_schema_map(root)
    return parse_text(relpath, text, schema, wiki_index)


def parse_text(
    relpath: str, text: str, schema: SchemaMap, wiki_index: WikiIndex | None = None
) -> ParsedDocument:
    """Parse ``text`` as the file at project-relative POSIX path ``relpath``."""
    content_hash = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    unusable = path_id_problem(relpath)
    if unusable is not None:
        problem = ParseProblem(relpath, 1, f"refused: {unusable}")
        return ParsedDocument(relpath, content_hash, (), (), (problem,))
    source = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    builder = _Builder(relpath, source, schema, wiki_index)
    builder.run()
    entities = builder.entities
    doc = ParsedDocument(
        relpath,
        content_hash,
        tuple(builder.nodes() + (entities.nodes() if entities else [])),
        tuple(list(builder.edges.values()) + (entities.edges() if entities else [])),
        tuple(builder.problems),
    )
    # Rule files gain their directives (imported here: kg.directives builds on kg.parsed.model).
    from kg.directives.nodes import with_directives

    return with_directives(doc, source, schema.directives)


@dataclass(slots=True)
class _Section:
    node_id: str
    node_type: str
    name: str
    level: int
    anchor: str
    line: int  # 0-based first line of the heading
    body_start: int  # 0-based first line after the heading
    defines: set[str] = field(default_factory=set)
    path: tuple[str, ...] = ()  # the headings above it, outermost first


class _Builder:
    """One pass over the tokens of one file, collecting nodes, edges and problems."""

    def __init__(
        self, relpath: str, source: str, schema: SchemaMap, wiki_index: WikiIndex | None
    ) -> None:
        self.relpath = relpath
        self.doc_id = document_id(relpath)
        self.source = source
        self.schema = schema
        self.wiki_index = wiki_index
        self.front_matter: dict[str, Any] = {}
        self.preamble_start = 0
        self.sections: list[_Section] = []
        self.requirements: dict[str, ParsedNode] = {}
        # Requirement ids: what this file defines (and where), what the project does
        # (kg.ingest.requirements), and the mentions, resolved once the walk is over.
        self.index: RequirementIndex | None = wiki_index.requirements if wiki_index else None
        self.local_defs: dict[str, Definition] = {
            d.canonical: d for d in schema.requirements.definitions(source)
        }
        self.recognised = _Recognised(self.local_defs, self.index)
        self.defining: dict[str, str] = {}  # canonical -> the node that defines it here
        self.defined_at: dict[str, int] = {}  # canonical -> the line of that definition
        self.mentions: list[tuple[str, RequirementMatch, int]] = []
        self.edges: dict[tuple[str, str, str], ParsedEdge] = {}
        self.problems: list[ParseProblem] = []
        self.first_h1: str | None = None
        self.lines: list[str] = []
        self.slugger = Slugger()
        self.entities = EntityScanner(relpath, schema.entities) if schema.entities.enabled else None

    # -- token walk -------------------------------------------------------------------------

    def run(self) -> None:
        env: dict[str, Any] = {}
        tokens = markdown_parser().parse(self.source, env)
        self.lines = self.source.split("\n")
        if env.get(UNCLOSED_FLAG):
            self._problem(1, "front matter opened by '---' on line 1 is never closed")
        stack: list[_Section] = []
        current = self.doc_id
        defined: set[str] = set()
        glossary = False  # inside a glossary section (entities preset ``glossary``)
        for index, token in enumerate(tokens):
            if token.type == FRONT_MATTER:
                self._front_matter(token)
            elif token.type == "heading_open":
                section = self._section(token, tokens[index + 1])
                while stack and stack[-1].level >= section.level:
                    stack.pop()
                section.path = tuple(s.name for s in stack)
                if stack:
                    self._edge(PARENT_OF, stack[-1].node_id, section.node_id, {})
                stack.append(section)
                current, defined = section.node_id, section.defines
                if self.entities is not None:
                    glossary = any(self.entities.is_glossary(s.name) for s in stack)
                    self.entities.heading(section.name, current, section.path, section.line + 1)
            elif token.type == "inline":
                line = token.map[0] + 1 if token.map else 1
                self._scan_requirements(token.content, line, current, defined)
                if self.wiki_index is not None and self.wiki_index.code:
                    self._scan_code(token.content, line, current)
                if self.entities is not None:
                    self.entities.scan(token.content, line, current, glossary)
                if token.children:
                    self._scan_links(token.children, line, current)
        self._requirement_edges()

    def _front_matter(self, token: Token) -> None:
        assert token.map is not None
        self.preamble_start = token.map[1]
        try:
            self.front_matter = parse_front_matter(token.content)
        except FrontMatterError as error:
            # The YAML starts on file line 2 (after the opening fence).
            self._problem(error.line + 2, str(error))

    def _section(self, heading: Token, inline: Token) -> _Section:
        assert heading.map is not None
        name = _plain_text(inline.children or [])
        level = int(heading.tag[1])
        anchor = self.slugger.slug(name)
        node_id = section_id(self.relpath, anchor)
        node_type = self.schema.section_type(name) or SECTION
        section = _Section(node_id, node_type, name, level, anchor, heading.map[0], heading.map[1])
        self.sections.append(section)
        self._edge(CONTAINS, self.doc_id, node_id, {})
        if level == 1 and self.first_h1 is None:
            self.first_h1 = name
        defined = self.schema.requirements.leading(name, self.recognised)
        if defined is not None and defined.canonical in self.defining:
            self._defined_again(defined.canonical, heading.map[0] + 1)
        elif defined is not None:
            line = heading.map[0] + 1
            section.defines.add(defined.canonical)
            self.defining[defined.canonical] = node_id
            self.defined_at[defined.canonical] = line
            req = self._requirement(scoped_id(self.relpath, defined.canonical), line)
            self._edge(DEFINES, node_id, req, {"line": line, "raw": defined.raw})
        return section

    def _scan_requirements(self, content: str, line: int, owner: str, defined: set[str]) -> None:
        """Requirement ids in the source of one inline run (inline code and link text included).

        The source is scanned rather than the text tokens because most paragraphs are never
        tokenised (see :mod:`kg.ingest.mdit`); ``line`` is the 1-based line the run starts on.
        """
        seen = 0
        for match in self.schema.requirements.find(content, self.recognised):
            line += content.count("\n", seen, match.start)
            seen = match.start
            if match.canonical not in defined:
                self.mentions.append((owner, match, line))

    def _requirement_edges(self) -> None:
        """DEFINES from the section holding each definition this file states (a list item,
        a paragraph or a table row; headings did theirs), then a REFERENCES edge for each
        mention: to this file's definition, else to the project's nearest one, else (a
        configured kind nobody defines) to the project-wide id; none when the nearest
        definitions are in several folders (see :class:`RequirementIndex`)."""
        starts = [s.line + 1 for s in self.sections]
        for d in sorted(self.local_defs.values(), key=lambda d: d.line):
            if d.canonical in self.defining:
                if d.line != self.defined_at[d.canonical]:
                    self._defined_again(d.canonical, d.line)
                continue
            at = bisect_right(starts, d.line) - 1
            owner = self.sections[at].node_id if at >= 0 else self.doc_id
            self.defining[d.canonical] = owner
            self.defined_at[d.canonical] = d.line
            req = self._requirement(scoped_id(self.relpath, d.canonical), d.line)
            self._edge(DEFINES, owner, req, {"line": d.line, "raw": d.raw})
        for owner, match, line in self.mentions:
            canonical = match.canonical
            targets: list[str] | None
            if canonical in self.defining:
                if self.defining[canonical] == owner:
                    continue  # restated where it is defined
                targets = [scoped_id(self.relpath, canonical)]
            else:
                targets = self.index.targets(canonical, self.relpath) if self.index else None
                if targets is None:
                    if not self.schema.requirements.is_configured(canonical):
                        continue
                    targets = [bare_id(canonical)]
            for target in targets:
                self._requirement(target, line)
                self._edge(REFERENCES, owner, target, {"line": line, "raw": match.raw})

    def _defined_again(self, canonical: str, line: int) -> None:
        # A heading's definition is kept even below a list item's (headings come first).
        first, line = sorted((self.defined_at[canonical], line))
        self._problem(
            line,
            f"requirement {canonical} is defined twice in this file (lines {first} and {line}); "
            "only one definition is kept: give the other its own id",
            "warning",
        )

    def _scan_code(self, content: str, line: int, owner: str) -> None:
        """Source files and symbols named in inline code (:mod:`kg.ingest.code.mentions`)."""
        assert self.wiki_index is not None and self.wiki_index.code is not None
        for mention in self.wiki_index.code.find(content):
            at = line + content.count("\n", 0, mention.offset)
            if len(mention.targets) == 1:
                self._edge(REFERENCES, owner, mention.targets[0], {"line": at, "raw": mention.raw})
                continue
            shown = ", ".join(mention.targets[:3]) + (", ..." if len(mention.targets) > 3 else "")
            self._problem(
                at,
                f"`{mention.raw}` names {len(mention.targets)} symbols ({shown}); not linked: "
                f"name it with its file, e.g. `{mention.targets[0].partition(':')[2]}`",
                "warning",
            )

    def _scan_links(self, children: list[Token], line: int, owner: str) -> None:
        """Links and wiki links in one tokenised inline run; ``line`` is 1-based."""
        for child in children:
            kind = child.type
            if kind == "softbreak" or kind == "hardbreak":
                line += 1
            elif kind == "link_open":
                self._link(owner, str(child.attrs.get("href", "")), line)
            elif kind == WIKILINK:
                self._wikilink(owner, child.content, line)

    # -- links --------------------------------------------------------------------------------

    def _link(self, owner: str, href: str, line: int) -> None:
        try:
            target = resolve_href(self.relpath, href)
        except LinkEscapesRoot:
            self._problem(line, f"link target {href!r} is outside the project root; ignored")
            return
        if target is not None and self._usable(target, repr(href), line):
            self._edge(REFERENCES, owner, _target_id(target), {"line": line, "raw": href})

    def _wikilink(self, owner: str, inner: str, line: int) -> None:
        raw = f"[[{inner}]]"
        try:
            resolved = resolve_wikilink(self.relpath, inner, self.wiki_index)
        except LinkEscapesRoot:
            self._problem(line, f"wiki link {raw} is outside the project root; ignored")
            return
        if resolved is None:
            return
        target = resolved.target
        if not self._usable(target, raw, line):
            return
        if resolved.ambiguous:
            others = ", ".join(resolved.ambiguous)
            self._problem(
                line,
                f"wiki link {raw} matches several files; using {target.relpath} (not {others})",
                "warning",
            )
        self._edge(REFERENCES, owner, _target_id(target), {"line": line, "raw": raw})

    def _usable(self, target: LinkTarget, shown: str, line: int) -> bool:
        unusable = path_id_problem(target.relpath)
        if unusable is not None:
            self._problem(line, f"link target {shown} ignored: {unusable}")
        return unusable is None

    # -- collection ---------------------------------------------------------------------------

    def _requirement(self, node_id: str, line: int) -> str:
        canonical = node_id.rpartition("#")[2].removeprefix("requirement:")
        if node_id not in self.requirements:
            self.requirements[node_id] = ParsedNode(
                node_id, REQUIREMENT, canonical, "", {}, (REQUIREMENT,), line
            )
        return node_id

    def _edge(self, edge_type: str, from_node: str, to_node: str, props: dict[str, Any]) -> None:
        # One edge per (type, from, to): the first occurrence's line is kept.
        key = (edge_type, from_node, to_node)
        if key not in self.edges:
            self.edges[key] = ParsedEdge(edge_type, from_node, to_node, props)

    def _problem(self, line: int, message: str, severity: Severity = "error") -> None:
        self.problems.append(ParseProblem(self.relpath, line, message, severity))

    def _text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start:end]).strip()

    def _end(self, index: int) -> int:
        following = index + 1
        return self.sections[following].line if following < len(self.sections) else len(self.lines)

    def _status(self) -> dict[str, str]:
        """Deprecated or superseded, by front matter or an ADR status (:mod:`kg.ingest.status`);
        a successor given as a link to a Markdown file becomes its node id."""
        found = self._find_status()
        successor = found.get("superseded_by")
        if successor:
            try:
                target = resolve_href(self.relpath, successor)
            except LinkEscapesRoot:
                target = None
            if target is not None and path_id_problem(target.relpath) is None:
                found["superseded_by"] = _target_id(target)
        return found

    def _find_status(self) -> dict[str, str]:
        found = front_matter_status(self.front_matter)
        if found:
            return found
        first_h2 = next((s.line for s in self.sections if s.level >= 2), len(self.lines))
        for line in self.lines[self.preamble_start : first_h2]:
            if found := status_line(line):
                return found
        for i, section in enumerate(self.sections):
            if section.name.strip().strip(":").lower() == "status":
                body = self._text(section.body_start, self._end(i))
                first = next((line for line in body.splitlines() if line.strip()), "")
                return status_line(first, heading_is_status=True)
        return {}

    def _labels(self) -> tuple[str, ...]:
        """Labels for the document and each of its sections, which policies select by: the
        schema map's for the file's path, then the front matter's ``labels:``."""
        declared = self.front_matter.get("labels", [])
        declared = [declared] if isinstance(declared, str) else declared
        if not isinstance(declared, list) or not all(isinstance(v, str) for v in declared):
            self._problem(1, "front matter 'labels' must be a label or a list of labels")
            declared = []
        good = []
        for label in declared:
            if LABEL.match(label):
                good.append(label)
            else:
                self._problem(1, f"front matter label {clip(label)} is not valid: {LABEL_RULE}")
        labels = [*self.schema.labels_for(self.relpath), *good]
        return tuple(dict.fromkeys(label for label in labels if label not in (DOCUMENT, SECTION)))

    def nodes(self) -> list[ParsedNode]:
        first_heading = self.sections[0].line if self.sections else len(self.lines)
        title = self.front_matter.get("title")
        name = title[:MAX_NAME] if isinstance(title, str) and title.strip() else self.first_h1
        doc_type = self.schema.document_type(self.relpath, self.front_matter) or DOCUMENT
        status = self._status()
        extra = self._labels()
        nodes = [
            ParsedNode(
                self.doc_id,
                doc_type,
                name or posixpath.splitext(posixpath.basename(self.relpath))[0],
                self._text(self.preamble_start, first_heading),
                {**status, **self.front_matter},
                (DOCUMENT, *extra),
                1,
            )
        ]
        for i, section in enumerate(self.sections):
            properties: dict[str, Any] = {"level": section.level, "anchor": section.anchor}
            if section.path:
                properties["path"] = list(section.path)
            nodes.append(
                ParsedNode(
                    section.node_id,
                    section.node_type,
                    section.name,
                    self._text(section.body_start, self._end(i)),
                    {**properties, **status},
                    (SECTION, *extra),
                    section.line + 1,
                )
            )
        nodes.extend(self.requirements.values())
        return nodes


class _Recognised(Container[str]):
    """Ids of the general shape that count in this file: those it defines, and those any
    document of the project defines."""

    __slots__ = ("_index", "_local")

    def __init__(self, local: dict[str, Definition], index: RequirementIndex | None) -> None:
        self._local = local
        self._index = index

    def __contains__(self, canonical: object) -> bool:
        return canonical in self._local or (self._index is not None and canonical in self._index)


def _target_id(target: LinkTarget) -> str:
    if target.anchor:
        return section_id(target.relpath, target.anchor)
    return document_id(target.relpath)


_TEXT_TYPES = frozenset({"text", "code_inline"})


def _plain_text(children: list[Token]) -> str:
    """The text a reader sees in a heading: markup, HTML and images dropped."""
    parts: list[str] = []
    for child in children:
        if child.type in _TEXT_TYPES:
            parts.append(child.content)
        elif child.type == "softbreak" or child.type == "hardbreak":
            parts.append(" ")
        elif child.type == WIKILINK:
            target, _, label = child.content.partition("|")
            parts.append(label or target)
    return "".join(parts).strip()[:MAX_NAME]
