"""The ``entities:`` block of a schema map: which extractors a project switches on.

::

    entities:
      presets: [endpoints, events, bold_terms, relationships, glossary]
      bold_terms: APIObject          # the node type of a **bold term** (default: Concept)
      glossary_headings: ['^Glossary$']   # sections whose entries define Concepts
      extractors:                    # the project's own: a regex, a node type, an edge
        - pattern: '\\bE\\d{4}\\b'     # (?P<name>...) picks the name, else the whole match
          type: ErrorCode
          edge: MENTIONS             # from the section that names it (default MENTIONS)
      relations:                     # more verbs for relationship lines
        - pattern: 'depends on'
          edge: REQUIRES

Nothing is extracted unless the project asks for it: a schema map without ``entities:`` (or
the built-in default) yields the same graph as before this block existed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kg.errors import ValidationError
from kg.events.knowledge import NODE_TYPES

PRESETS = ("endpoints", "events", "bold_terms", "relationships", "glossary")
_KEYS = {"presets", "bold_terms", "glossary_headings", "extractors", "relations"}
_EXTRACTOR_KEYS = {"pattern", "type", "edge"}
_RELATION_KEYS = {"pattern", "edge"}
_TYPE_NAME = re.compile(r"^[A-Z][A-Za-z0-9]{0,63}$")
_EDGE_NAME = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
DEFAULT_GLOSSARY = (r"(?i)^(glossary|terminology|terms|definitions|key concepts)\b",)


@dataclass(frozen=True, slots=True)
class CustomExtractor:
    pattern: str
    node_type: str
    edge: str = "MENTIONS"
    regex: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "regex", re.compile(self.pattern))


@dataclass(frozen=True, slots=True)
class RelationRule:
    pattern: str
    edge: str


@dataclass(frozen=True, slots=True)
class EntityConfig:
    presets: frozenset[str] = frozenset()
    bold_type: str = "Concept"
    glossary_headings: tuple[str, ...] = DEFAULT_GLOSSARY
    extractors: tuple[CustomExtractor, ...] = ()
    relations: tuple[RelationRule, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.presets or self.extractors)

    def fingerprint(self) -> list[Any]:
        """What changes the extracted graph (for the schema fingerprint)."""
        return [
            sorted(self.presets),
            self.bold_type,
            list(self.glossary_headings),
            [[x.pattern, x.node_type, x.edge] for x in self.extractors],
            [[r.pattern, r.edge] for r in self.relations],
        ]


NO_ENTITIES = EntityConfig()


def parse_entities(raw: Any, source: str) -> EntityConfig:
    """Validate the ``entities:`` block; errors name the file and the offending field."""

    def fail(where: str, message: str) -> ValidationError:
        return ValidationError(f"{source}: entities{where}: {message}")

    if raw is None:
        return NO_ENTITIES
    if not isinstance(raw, dict):
        raise fail("", "expected a mapping (presets, bold_terms, extractors, relations, ...)")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise fail("", f"unknown key(s) {unknown}; allowed: {sorted(_KEYS)}")
    presets = _strings(raw.get("presets", []), ".presets", fail)
    bad = sorted(set(presets) - set(PRESETS))
    if bad:
        raise fail(".presets", f"unknown preset(s) {bad}; available: {list(PRESETS)}")
    bold_type = _type(raw.get("bold_terms", "Concept"), ".bold_terms", fail)
    glossary = _strings(raw.get("glossary_headings", list(DEFAULT_GLOSSARY)), ".glossary", fail)
    for i, pattern in enumerate(glossary):
        _compile(pattern, f".glossary_headings[{i}]", fail)
    extractors = []
    for i, item in enumerate(_list(raw.get("extractors", []), ".extractors", fail)):
        where = f".extractors[{i}]"
        _keys(item, _EXTRACTOR_KEYS, where, fail)
        pattern = _compile(item.get("pattern"), f"{where}.pattern", fail)
        node_type = _type(item.get("type"), f"{where}.type", fail)
        edge = _edge(item.get("edge", "MENTIONS"), f"{where}.edge", fail)
        extractors.append(CustomExtractor(pattern, node_type, edge))
    relations = []
    for i, item in enumerate(_list(raw.get("relations", []), ".relations", fail)):
        where = f".relations[{i}]"
        _keys(item, _RELATION_KEYS, where, fail)
        pattern = _compile(item.get("pattern"), f"{where}.pattern", fail)
        relations.append(RelationRule(pattern, _edge(item.get("edge"), f"{where}.edge", fail)))
    return EntityConfig(
        frozenset(presets), bold_type, tuple(glossary), tuple(extractors), tuple(relations)
    )


def _strings(value: Any, where: str, fail: Any) -> tuple[str, ...]:
    items: Any = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise fail(where, "expected a string or a list of strings")
    return tuple(items)


def _list(value: Any, where: str, fail: Any) -> list[Any]:
    if not isinstance(value, list):
        raise fail(where, "expected a list of mappings")
    return value


def _keys(item: Any, allowed: set[str], where: str, fail: Any) -> None:
    if not isinstance(item, dict):
        raise fail(where, f"expected a mapping with keys {sorted(allowed)}")
    unknown = sorted(str(k) for k in item if k not in allowed)
    if unknown:
        raise fail(where, f"unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _type(value: Any, where: str, fail: Any) -> str:
    """An entity node type: a type name that is not one of the graph's own (an extracted
    ``Section`` or ``Document`` would collide with the nodes files own)."""
    if not isinstance(value, str) or not _TYPE_NAME.match(value):
        raise fail(where, f"{value!r} is not a node type name like 'APIObject'")
    if value in NODE_TYPES:
        raise fail(where, f"{value!r} is a built-in node type; name the entity type otherwise")
    return value


def _compile(pattern: Any, where: str, fail: Any) -> str:
    if not isinstance(pattern, str) or not pattern:
        raise fail(where, "expected a regular expression")
    try:
        re.compile(pattern)
    except re.error as error:
        raise fail(where, f"invalid regular expression {pattern!r}: {error}") from None
    return pattern


def _edge(value: Any, where: str, fail: Any) -> str:
    if not isinstance(value, str) or not _EDGE_NAME.match(value):
        raise fail(where, f"{value!r} is not an edge type like 'REQUIRES'")
    return value
