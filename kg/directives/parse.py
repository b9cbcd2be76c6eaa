"""A rule file's text -> its metadata, its directives (one per statement) and its problems.

The rule template: a ``Metadata`` section of ``Key: value`` lines (Layer, AuthoritativeFor,
Topics, Severity; optionally Languages, Frameworks, AppliesTo), a ``When to Apply`` section
whose bullets become conditions, and statements marked ``[MUST]``/``[SHOULD]``/``[MAY]`` (or
read by their RFC 2119 keywords, :mod:`kg.directives.strength`). Files that do not follow it
(``AGENTS.md``, ``.cursor/rules/*.mdc``) parse too: every list item is a statement, and a
paragraph is one when it has a marker or a keyword. Sections that explain rather than direct
(Rationale, Examples, Background, ...) hold no directives.

A heading that starts with a marker (``### [MUST] Validate all input at the boundary``, as the
seed template writes them) is a directive of its own, read whole: the prose under it is part
of its text and has its strength whatever words it uses, a ``**When to apply**:`` line under
it is its own condition (beside the file's), and a marked item under it is a directive of
its own with the same section and conditions.

Scope comes from the front matter (``globs:`` of a Cursor rule, ``applies_to:``, ``layer:``,
``languages:``, ``frameworks:``), the Metadata block, or an ``applies_to:`` line, which
scopes the rest of its section (or, before the first heading, the whole file).

Line-based on purpose: statements and their 1-based lines are all that is needed, and it
keeps parsing a rule file a small fraction of parsing it as Markdown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kg.directives.config import DEFAULT_CONFIG, DirectiveConfig
from kg.directives.globs import GlobError, compile_glob
from kg.directives.model import (
    LAYERS,
    SEVERITIES,
    WILDCARD,
    ParsedDirective,
    RuleMeta,
    Scope,
    layer_name,
)
from kg.directives.strength import MARKER, StrengthReader
from kg.directives.topics import normalise_topic, topics_of
from kg.parsed.model import ParseProblem, Severity

MAX_STATEMENT = 2000
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_KEY_VALUE = re.compile(
    r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?([A-Za-z][A-Za-z _-]{1,30}?)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?"
    r"\s*(.*?)\s*$"
)
_APPLIES_TO = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*|__)?applies[_ -]to(?:\*\*|__)?\s*:\s*(.+)$",
                         re.IGNORECASE)  # fmt: skip
_NON_DIRECTIVE = frozenset({
    "rationale", "why", "examples", "example", "background", "context", "notes", "note",
    "references", "see also", "links", "history", "changelog", "glossary", "faq",
})  # fmt: skip
_WHEN = frozenset({"when to apply", "when to use", "applies when", "when this applies"})
_META_KEYS = {
    "layer": "layer", "layers": "layer", "authoritativefor": "authoritative_for",
    "authoritative": "authoritative_for", "topics": "topics", "topic": "topics",
    "severity": "severity", "languages": "languages", "language": "languages",
    "frameworks": "frameworks", "framework": "frameworks", "appliesto": "globs",
    "globs": "globs", "glob": "globs",
}  # fmt: skip
REQUIRED_META = ("layer", "topics", "severity")
_MIN_WORDS = 3


@dataclass(slots=True)
class RuleFile:
    """What :func:`parse_rule_file` found in one file."""

    meta: RuleMeta
    directives: list[ParsedDirective]
    problems: list[ParseProblem]
    usable: bool = True  # False: a malformed scope; the file's directives are skipped


@dataclass(slots=True)
class _Statement:
    text: str
    line: int
    section: str
    globs: tuple[str, ...]
    is_item: bool
    #: the conditions of the directive subsection it is in (``**When to apply**:`` lines)
    conditions: list[str] = field(default_factory=list)
    #: a directive heading's body, read as part of it (:func:`_walk`)
    body: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _State:
    relpath: str
    problems: list[ParseProblem] = field(default_factory=list)
    usable: bool = True

    def problem(self, line: int, message: str, severity: Severity = "error") -> None:
        self.problems.append(ParseProblem(self.relpath, line, message, severity))


def directive_id(relpath: str, text: str, seen: dict[str, int] | None = None) -> str:
    """``directive:{file}#{hash of the normalised text}``: the same statement keeps its id
    when the file is reordered; a changed statement gets a new one. A statement repeated in
    one file gets ``-2``, ``-3``, ... in order."""
    digest = hashlib.sha256(normalise_statement(text).encode()).hexdigest()[:16]
    node_id = f"directive:{relpath}#{digest}"
    if seen is not None:
        count = seen.get(node_id, 0) + 1
        seen[node_id] = count
        if count > 1:
            node_id = f"{node_id}-{count}"
    return node_id


def normalise_statement(text: str) -> str:
    text = re.sub(r"[`*_]+", "", text.casefold())
    return re.sub(r"\s+", " ", text).strip(" .;")


def parse_rule_file(
    relpath: str,
    source: str,
    front_matter: Mapping[str, Any] | None = None,
    config: DirectiveConfig = DEFAULT_CONFIG,
) -> RuleFile:
    """Parse ``source`` (line endings already ``\\n``) of the rule file at ``relpath``."""
    state = _State(relpath)
    lines = source.split("\n")
    start = _front_matter_end(lines)
    fm_line = next(
        (i + 1 for i in range(start) if lines[i].lstrip().startswith(("globs", "applies"))), 1
    )
    fm_meta = _front_matter_meta(front_matter or {}, fm_line, state)
    statements, meta_lines, conditions, file_globs = _walk(lines, start, state)
    meta = _merge(fm_meta, _metadata_block(meta_lines, state), conditions, file_globs, state)
    reader = StrengthReader(config)
    seen: dict[str, int] = {}
    directives: list[ParsedDirective] = []
    for st in statements:
        reading = reader.read(st.text)
        if not st.is_item and not reading.explicit:
            continue  # a paragraph is a statement only when it says how strongly
        text = _with_body(reading.text, st.body)[:MAX_STATEMENT]
        if len(text.split()) < _MIN_WORDS or text.endswith(":"):
            continue
        own_topics = topics_of([st.section, meta.description, text, *st.conditions], config)
        scope = meta.scope if not st.globs else replace(meta.scope, globs=st.globs)
        directive_meta = replace(
            meta, scope=scope, topics=tuple(sorted({*meta.topics, *own_topics})),
            conditions=tuple(dict.fromkeys((*meta.conditions, *st.conditions))),
        )  # fmt: skip
        directives.append(
            ParsedDirective(
                node_id=directive_id(relpath, text, seen),
                text=text,
                strength=reading.strength,
                negated=reading.negated,
                line=st.line,
                section=st.section,
                meta=directive_meta,
                explicit=reading.explicit,
                subject=subject_of(text),
            )
        )
    return RuleFile(meta, directives if state.usable else [], state.problems, state.usable)


_SUBJECT_NOISE = re.compile(
    r"\b(?:must|mustn't|shall|should|shouldn't|may|not|never|always|do|don't|does|doesn't|"
    r"required|recommended|optional|avoid|be|is|are|the|a|an|to|you|we)\b"
)


def subject_of(text: str) -> str:
    """The statement without its modal and negation words: what it is about (for conflicts)."""
    words = _SUBJECT_NOISE.sub(" ", normalise_statement(text))
    return " ".join(re.sub(r"[^\w\s./-]+", " ", words).split())


def _with_body(text: str, body: list[str]) -> str:
    """A directive heading's statement followed by the prose under it."""
    if not body:
        return text
    return f"{text.rstrip(' .:;')}: {' '.join(body)}"


def _front_matter_end(lines: list[str]) -> int:
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            return i + 1
    return 0


def _walk(
    lines: list[str], start: int, state: _State
) -> tuple[list[_Statement], list[tuple[int, str]], list[str], tuple[str, ...]]:
    """Statements, Metadata lines, When-to-Apply conditions, file-level applies_to globs."""
    statements: list[_Statement] = []
    meta_lines: list[tuple[int, str]] = []
    conditions: list[str] = []
    file_globs: tuple[str, ...] = ()
    section = ""
    kind = "body"  # body | meta | when | skip
    section_globs: tuple[str, ...] = ()
    fence: str | None = None
    current: _Statement | None = None
    seen_heading = False
    lead: _Statement | None = None  # the directive heading whose subsection this is

    def flush() -> None:
        nonlocal current
        if current is not None:
            text = " ".join(current.text.split())
            if kind == "when":
                conditions.append(text.rstrip("."))
            elif kind == "body" and text:
                if lead is not None and current is not lead and not MARKER.match(text):
                    lead.body.append(text)  # the heading's body: its text, its strength
                else:
                    current.text = text
                    statements.append(current)
        current = None

    for index in range(start, len(lines)):
        raw = lines[index]
        number = index + 1
        if fence is not None:
            if raw.strip().startswith(fence):
                fence = None
            continue
        opened = _FENCE.match(raw)
        if opened:
            flush()
            fence = opened.group(1)[:3]
            continue
        stripped = raw.strip()
        heading = _HEADING.match(raw)
        if heading:
            flush()
            lead = None
            seen_heading = True
            section = heading.group(2).strip()
            marker = MARKER.match(section)
            if marker is not None and kind != "meta":
                # ``### [MUST] Validate all input``: a directive, its subsection its body.
                kind = "body"
                lead = _Statement(section, number, section[marker.end() :].strip(),
                                  section_globs, True)  # fmt: skip
                section = lead.section
                statements.append(lead)
                continue
            key = section.strip(":").casefold()
            kind = (
                "meta" if key == "metadata" else "when" if key in _WHEN
                else "skip" if key in _NON_DIRECTIVE else "body"
            )  # fmt: skip
            section_globs = ()
            continue
        if not stripped or stripped.startswith(("|", "<!--", "<")):
            flush()
            continue
        applies = _APPLIES_TO.match(raw)
        if applies and kind != "meta":
            flush()
            globs = _globs(_split(applies.group(1)), number, state)
            if seen_heading:
                section_globs = globs
            else:
                file_globs = globs
            continue
        if kind == "meta":
            meta_lines.append((number, raw))
            continue
        if kind == "skip":
            continue
        if lead is not None:
            when = _KEY_VALUE.match(raw)
            if when is not None and when.group(1).strip().casefold() in _WHEN:
                flush()
                lead.conditions.append(" ".join(when.group(2).split()).rstrip("."))
                continue
        item = _ITEM.match(raw)
        text = stripped.lstrip("> ").strip()
        if item:
            flush()
            current = _Statement(item.group(2).strip(), number, section, section_globs, True)
            if lead is not None:
                current.conditions = lead.conditions
        elif current is not None:  # a continuation line (lazy, as in CommonMark)
            current.text += " " + text
        else:
            current = _Statement(text, number, section, section_globs, False)
            if lead is not None:
                current.conditions = lead.conditions
    flush()
    return statements, meta_lines, conditions, file_globs


def _split(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    text = str(value).strip().strip("[]")
    parts = re.split(r",(?![^{]*\})", text)  # a comma inside {a,b} is part of a glob
    return [p.strip().strip("`'\"") for p in parts if p.strip().strip("`'\"")]


def _looks_like_glob(value: str) -> bool:
    return any(c in value for c in "*/?.{[")


def _globs(values: list[str], line: int, state: _State) -> tuple[str, ...]:
    globs = []
    for value in values:
        if not _looks_like_glob(value):
            continue  # e.g. ``applies_to: [Document, Section]``: node types, not paths
        try:
            compile_glob(value)
        except GlobError as error:
            state.problem(line, f"{error}; the rules in this file were skipped")
            state.usable = False
            continue
        globs.append(value)
    return tuple(globs)


def _front_matter_meta(fm: Mapping[str, Any], line: int, state: _State) -> dict[str, Any]:
    """Scope keys of the front matter (Cursor: ``globs``, ``alwaysApply``, ``description``)."""
    found: dict[str, Any] = {}
    globs: list[str] = []
    for key in ("globs", "applies_to", "appliesTo"):
        if key in fm and fm[key] is not None:
            globs += _split(fm[key])
    if globs:
        found["globs"] = _globs(globs, line, state)
    for key in ("layer", "layers", "topics", "authoritative_for", "severity", "languages",
                "frameworks"):  # fmt: skip
        if key in fm and fm[key] is not None:
            found[_META_KEYS.get(key.replace("_", ""), key)] = _split(fm[key])
    if fm.get("alwaysApply") is True or fm.get("always_apply") is True:
        found["always_apply"] = True
    description = fm.get("description")
    if isinstance(description, str) and description.strip():
        found["description"] = description.strip()
    return found


def _metadata_block(meta_lines: list[tuple[int, str]], state: _State) -> dict[str, Any]:
    if not meta_lines:
        return {}
    found: dict[str, Any] = {"_block_line": meta_lines[0][0] - 1}
    for number, raw in meta_lines:
        match = _KEY_VALUE.match(raw)
        if match is None:
            continue
        key = re.sub(r"[^a-z]", "", match.group(1).casefold())
        field_name = _META_KEYS.get(key)
        if field_name is None:
            state.problem(number, f"unknown Metadata field {match.group(1).strip()!r}; known: "
                          "Layer, AuthoritativeFor, Topics, Severity, Languages, Frameworks, "
                          "AppliesTo", "warning")  # fmt: skip
            continue
        values = _split(match.group(2))
        if field_name == "globs":
            found["globs"] = _globs(values, number, state)
        else:
            found[field_name] = values
        found[f"_{field_name}_line"] = number
    block = found["_block_line"]
    for required in REQUIRED_META:
        if not found.get(required):
            state.problem(block, f"Metadata has no {_SHOWN[required]}: add a line like "
                          f"'- **{_SHOWN[required]}**: {_EXAMPLE[required]}'")  # fmt: skip
    return found


_SHOWN = {"layer": "Layer", "topics": "Topics", "severity": "Severity"}
_EXAMPLE = {"layer": "3-Domain", "topics": "auth, api", "severity": "high"}


def _merge(
    fm: dict[str, Any],
    block: dict[str, Any],
    conditions: list[str],
    file_globs: tuple[str, ...],
    state: _State,
) -> RuleMeta:
    merged = {**fm, **{k: v for k, v in block.items() if not k.startswith("_")}}
    layers: list[str] = []
    for value in merged.get("layer", []):
        layer = layer_name(value)
        if layer is None:
            line = block.get("_layer_line", 1)
            state.problem(line, f"Layer {value!r} is not one of {', '.join(LAYERS)} or '*'")
        else:
            layers.append(layer)
    severity = None
    for value in merged.get("severity", [])[:1]:
        if value.casefold() in SEVERITIES:
            severity = value.casefold()
        else:
            line = block.get("_severity_line", 1)
            state.problem(line, f"Severity {value!r} is not one of {', '.join(sorted(SEVERITIES))}")
    globs = tuple(merged.get("globs", ())) or file_globs
    scope = Scope(
        globs=globs,
        layers=tuple(dict.fromkeys(layers)) if WILDCARD not in layers else (WILDCARD,),
        languages=tuple(v.casefold() for v in merged.get("languages", [])),
        frameworks=tuple(v.casefold() for v in merged.get("frameworks", [])),
    )
    topics = tuple(sorted({normalise_topic(t) for t in merged.get("topics", []) if t}))
    authority = tuple(
        sorted({normalise_topic(t) for t in merged.get("authoritative_for", []) if t})
    )
    return RuleMeta(
        scope=scope,
        topics=tuple(t for t in topics if t),
        authoritative_for=tuple(t for t in authority if t),
        severity=severity,
        conditions=tuple(conditions),
        description=str(fm.get("description", "")),
        always_apply=bool(fm.get("always_apply")),
    )
