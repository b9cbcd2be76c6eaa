"""Mapping documents and headings onto typed nodes (PRD, ADR, Epic, Story, ...).

A schema map is a YAML file, ``.kg/schema.yaml`` or ``kg-schema.yaml`` in the project root::

    version: 1
    include_defaults: true       # (default) the built-in rules are tried after these
    requirement_prefixes: [FR, NFR]
    rules:
      - type: PRD
        paths: ["**/prd*.md"]    # globs on the project-relative path, case-insensitive
        front_matter_type: [prd] # values of the front matter ``type:`` key, case-insensitive
      - type: Story
        paths: ["**/stories/*.md"]
        headings: ['^Story\\b']   # regular expressions searched in the heading text
    labels:                      # labels by path, for policies to select (kg.policies)
      - paths: ["docs/legal/**"]
        labels: [secret]
    code:                        # source files (default: every supported language, anywhere)
      languages: [python, typescript]
      exclude: ["**/fixtures/**"]
      history: 500               # commits read for git facts and co-change; 0: none

    entities:                    # optional: extract entities from the prose
      presets: [endpoints, events, bold_terms, relationships, glossary]

``paths`` and ``front_matter_type`` type documents; ``headings`` type sections. A front matter
match beats a path match (the author said so explicitly); otherwise the first matching rule
wins. Typing never changes a node id, only its ``node_type``. ``labels`` give every node of
the files they match (document and sections) those labels, as front matter ``labels:`` does.
The ``entities`` block is described in :mod:`kg.ingest.entities.config`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kg.directives.config import DEFAULT_CONFIG, DirectiveConfig, parse_directive_config
from kg.errors import ValidationError
from kg.globs import glob_to_regex as shared_glob
from kg.ingest.entities.config import NO_ENTITIES, EntityConfig, parse_entities
from kg.ingest.requirements import DEFAULT_PREFIXES, RequirementMatcher
from kg.project_files import Refused, read_project_bytes

SCHEMA_FILES = (".kg/schema.yaml", "kg-schema.yaml")
# The event layer's node type pattern (kg.events.knowledge): CamelCase letters and digits.
_TYPE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}$")
_PREFIX = re.compile(r"^[A-Za-z]+$")
_TOP_KEYS = {
    "version", "include_defaults", "requirement_prefixes", "rules", "labels", "code",
    "directives", "entities",
}  # fmt: skip
_CODE_KEYS = {"languages", "exclude", "history"}
_RULE_KEYS = {"type", "paths", "front_matter_type", "headings"}
_LABEL_KEYS = {"paths", "labels"}
#: What a label may be (front matter or schema map): policies select nodes by it.
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
LABEL_RULE = "use 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit"


def glob_to_regex(glob: str) -> re.Pattern[str]:
    """A schema-map path glob, case-insensitive (:func:`kg.globs.glob_to_regex`)."""
    return shared_glob(glob, ignore_case=True)


@dataclass(frozen=True, slots=True)
class TypeRule:
    node_type: str
    paths: tuple[str, ...] = ()
    front_matter_types: tuple[str, ...] = ()
    headings: tuple[str, ...] = ()
    _path_res: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _heading_res: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _fm_types: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_path_res", tuple(glob_to_regex(p) for p in self.paths))
        object.__setattr__(self, "_heading_res", tuple(re.compile(h) for h in self.headings))
        object.__setattr__(
            self, "_fm_types", frozenset(t.casefold() for t in self.front_matter_types)
        )

    def matches_path(self, relpath: str) -> bool:
        return any(p.fullmatch(relpath) for p in self._path_res)

    def matches_front_matter(self, doc_type: str) -> bool:
        return doc_type.casefold() in self._fm_types

    def matches_heading(self, text: str) -> bool:
        return any(h.search(text) for h in self._heading_res)


DEFAULT_RULES: tuple[TypeRule, ...] = (
    TypeRule("PRD", paths=("**/prd*.md",), front_matter_types=("prd",)),
    TypeRule("ADR", paths=("**/adr/*.md", "**/adr-*.md"), front_matter_types=("adr",)),
    TypeRule(
        "Epic", paths=("**/epics/*.md",), front_matter_types=("epic",), headings=(r"^Epic\b",)
    ),
    TypeRule(
        "Story", paths=("**/stories/*.md",), front_matter_types=("story",), headings=(r"^Story\b",)
    ),
    TypeRule("Rule", paths=("**/rules/*.md",), front_matter_types=("rule",)),
)


@dataclass(frozen=True, slots=True)
class LabelRule:
    paths: tuple[str, ...]
    labels: tuple[str, ...]
    _path_res: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_path_res", tuple(glob_to_regex(p) for p in self.paths))

    def matches_path(self, relpath: str) -> bool:
        return any(p.fullmatch(relpath) for p in self._path_res)


@dataclass(frozen=True, slots=True)
class SchemaMap:
    rules: tuple[TypeRule, ...] = DEFAULT_RULES
    requirement_prefixes: tuple[str, ...] = DEFAULT_PREFIXES
    source: str = "<built-in default>"
    label_rules: tuple[LabelRule, ...] = ()
    code_languages: tuple[str, ...] = ()  # empty: every supported language
    code_exclude: tuple[str, ...] = ()
    code_history: int = 500
    directives: DirectiveConfig = DEFAULT_CONFIG  # rule statements (kg.directives.config)
    entities: EntityConfig = NO_ENTITIES
    requirements: RequirementMatcher = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "requirements", RequirementMatcher(self.requirement_prefixes))

    def document_type(self, relpath: str, front_matter: Mapping[str, Any]) -> str | None:
        declared = front_matter.get("type")
        if isinstance(declared, str):
            for rule in self.rules:
                if rule.matches_front_matter(declared):
                    return rule.node_type
        return next((r.node_type for r in self.rules if r.matches_path(relpath)), None)

    def labels_for(self, relpath: str) -> tuple[str, ...]:
        """The labels the schema map gives the nodes of this file."""
        return tuple(
            label
            for rule in self.label_rules
            if rule.matches_path(relpath)
            for label in rule.labels
        )

    def section_type(self, heading: str) -> str | None:
        return next((r.node_type for r in self.rules if r.matches_heading(heading)), None)

    def code_skip_reason(self, relpath: str, language: str) -> str | None:
        """Why the schema map leaves a source file out, or None when it is parsed."""
        if self.code_languages and language not in self.code_languages:
            return "language not enabled in the schema map"
        if any(glob_to_regex(g).fullmatch(relpath) for g in self.code_exclude):
            return "excluded by the schema map"
        return None


DEFAULT_SCHEMA = SchemaMap()


def load_schema_map(root: Path) -> SchemaMap:
    """The project's schema map, or the built-in default when the project has none.

    Raises:
        ValidationError: the file exists but is not a valid schema map; the message names the
            file and the offending field.
    """
    for name in SCHEMA_FILES:
        path = root / name
        if path.is_file() or path.is_symlink():
            data = read_project_bytes(root, Path(name))
            try:
                if isinstance(data, Refused):
                    raise ValueError(data.message)
                text = data.decode("utf-8")
            except (ValueError, UnicodeDecodeError) as error:
                raise ValidationError(f"{path}: cannot read schema map: {error}") from None
            return parse_schema_map(text, str(path))
    return DEFAULT_SCHEMA


def parse_schema_map(text: str, source: str) -> SchemaMap:
    """Parse and validate schema-map YAML; ``source`` names the file in error messages."""

    def fail(where: str, message: str) -> ValidationError:
        return _error(source, where, message)

    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else 1
        raise ValidationError(f"{source}:{line}: invalid YAML: {error.problem}") from None
    except yaml.YAMLError as error:
        raise ValidationError(f"{source}: invalid YAML: {error}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise fail("top level", f"expected a mapping, got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise fail("top level", f"unknown key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}")
    if data.get("version", 1) != 1:
        raise fail("version", f"unsupported version {data['version']!r}; expected 1")
    # A map adds to the built-in typing; it takes it away only when it says so: adding
    # `rules:` used to turn every PRD, ADR, Epic, Story and Rule into a plain Document.
    include_defaults = data.get("include_defaults", True)
    if not isinstance(include_defaults, bool):
        raise fail("include_defaults", "expected true or false")
    prefixes = _strings(
        data.get("requirement_prefixes", list(DEFAULT_PREFIXES)), "requirement_prefixes", source
    )
    for prefix in prefixes:
        if not _PREFIX.match(prefix):
            raise fail("requirement_prefixes", f"{prefix!r} must be letters only")
    raw_rules = data.get("rules", [])
    if not isinstance(raw_rules, list):
        raise fail("rules", "expected a list of rules")
    rules = [_rule(raw, f"rules[{i}]", source) for i, raw in enumerate(raw_rules)]
    if include_defaults:
        rules.extend(DEFAULT_RULES)
    raw_labels = data.get("labels", [])
    if not isinstance(raw_labels, list):
        raise fail("labels", "expected a list of {paths, labels} entries")
    labels = [_label_rule(raw, f"labels[{i}]", source) for i, raw in enumerate(raw_labels)]
    languages, exclude, history = _code(data.get("code", {}), source)
    directives = parse_directive_config(data.get("directives"), source)
    entities = parse_entities(data.get("entities"), source)
    return SchemaMap(
        tuple(rules),
        prefixes,
        source,
        tuple(labels),
        code_languages=languages,
        code_exclude=exclude,
        code_history=history,
        directives=directives,
        entities=entities,
    )


def _label_rule(raw: Any, where: str, source: str) -> LabelRule:
    if not isinstance(raw, dict) or set(raw) != _LABEL_KEYS:
        raise _error(source, where, "expected a mapping with 'paths' and 'labels'")
    paths = _strings(raw["paths"], f"{where}.paths", source)
    labels = _strings(raw["labels"], f"{where}.labels", source)
    for label in labels:
        if not LABEL.match(label):
            raise _error(source, f"{where}.labels", f"{label!r} is not valid: {LABEL_RULE}")
    return LabelRule(paths, labels)


def _code(raw: Any, source: str) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    from kg.languages import LANGUAGES

    if not isinstance(raw, dict):
        raise _error(source, "code", "expected a mapping (languages, exclude, history)")
    unknown = sorted(str(k) for k in raw if k not in _CODE_KEYS)
    if unknown:
        raise _error(source, "code", f"unknown key(s) {unknown}; allowed: {sorted(_CODE_KEYS)}")
    languages = _strings(raw.get("languages", []), "code.languages", source)
    supported = sorted(set(LANGUAGES.values()))
    for language in languages:
        if language not in supported:
            raise _error(
                source, "code.languages", f"{language!r} is not supported; choose from {supported}"
            )
    exclude = _strings(raw.get("exclude", []), "code.exclude", source)
    history = raw.get("history", 500)
    if not isinstance(history, int) or isinstance(history, bool) or not 0 <= history <= 100_000:
        raise _error(source, "code.history", "expected a number of commits from 0 to 100000")
    return languages, exclude, history


def _rule(raw: Any, where: str, source: str) -> TypeRule:
    def fail(where: str, message: str) -> ValidationError:
        return _error(source, where, message)

    if not isinstance(raw, dict):
        raise fail(where, "expected a mapping with a 'type' key")
    unknown = sorted(str(k) for k in raw if k not in _RULE_KEYS)
    if unknown:
        raise fail(where, f"unknown key(s) {unknown}; allowed: {sorted(_RULE_KEYS)}")
    node_type = raw.get("type")
    if not isinstance(node_type, str) or not _TYPE_NAME.match(node_type):
        raise fail(f"{where}.type", f"{node_type!r} is not a node type name like 'Story'")
    paths = _strings(raw.get("paths", []), f"{where}.paths", source)
    fm_types = _strings(raw.get("front_matter_type", []), f"{where}.front_matter_type", source)
    headings = _strings(raw.get("headings", []), f"{where}.headings", source)
    if not (paths or fm_types or headings):
        raise fail(where, "a rule needs at least one of paths, front_matter_type, headings")
    for i, pattern in enumerate(headings):
        try:
            re.compile(pattern)
        except re.error as error:
            raise fail(
                f"{where}.headings[{i}]", f"invalid regular expression {pattern!r}: {error}"
            ) from None
    return TypeRule(node_type, paths, fm_types, headings)


def _strings(value: Any, where: str, source: str) -> tuple[str, ...]:
    items: Any = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise _error(source, where, "expected a string or a list of strings")
    return tuple(items)


def _error(source: str, where: str, message: str) -> ValidationError:
    return ValidationError(f"{source}: {where}: {message}")
