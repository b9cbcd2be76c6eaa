"""Plain data for directives: strengths, layers, and one parsed rule statement."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Strength = Literal["MUST", "SHOULD", "MAY"]
STRENGTHS: tuple[Strength, ...] = ("MUST", "SHOULD", "MAY")

DIRECTIVE = "Directive"
TOPIC = "Topic"
LAYER = "Layer"
#: Label of nodes several files assert (topics, layers): like requirement nodes, a file asserts
#: one only when the graph lacks it and never retires it (kg.ingest.diff).
SHARED = "Shared"

# Edge types (the open set of kg.events.knowledge).
ABOUT = "ABOUT"  # directive -> topic
APPLIES_TO = "APPLIES_TO"  # directive -> layer
AUTHORITATIVE_FOR = "AUTHORITATIVE_FOR"  # rule document -> topic

#: The architectural layers of the rule template; ``*`` is every layer.
LAYERS: tuple[str, ...] = (
    "1-Presentation",
    "2-Application",
    "3-Domain",
    "4-Persistence",
    "5-Tests",
    "6-Docs",
    "7-Deployment",
)
WILDCARD = "*"

#: Severity words of the template and their weight in the score (0..1).
SEVERITIES: dict[str, float] = {
    "critical": 1.0,
    "high": 0.8,
    "must": 1.0,
    "medium": 0.5,
    "should": 0.6,
    "low": 0.3,
    "may": 0.3,
}
STRENGTH_WEIGHT: dict[str, float] = {"MUST": 1.0, "SHOULD": 0.6, "MAY": 0.3}


#: Section headings that say nothing about when their statements apply.
GENERIC_SECTIONS = frozenset({"", "directives", "rules", "guidelines", "instructions"})


def when_texts(conditions: tuple[str, ...], section: str, description: str) -> tuple[str, ...]:
    """What says when a directive applies: its When-to-Apply conditions; a rule file without
    them (``AGENTS.md``, Cursor rules) has its section heading instead ("## Testing"), else
    the description of a Cursor rule."""
    if conditions:
        return conditions
    if section.casefold().strip(": ") not in GENERIC_SECTIONS:
        return (section,)
    return (description,) if description else ()


def when_words(
    conditions: tuple[str, ...], section: str, description: str
) -> tuple[frozenset[str], ...]:
    """The words of each of :func:`when_texts` (what the catalogue keeps for scoring)."""
    from kg.directives.words import words

    return tuple(words(text) for text in when_texts(conditions, section, description))


def layer_name(value: str) -> str | None:
    """The canonical layer for ``3-Domain``, ``3``, ``domain`` (any case), ``*``; else None."""
    text = value.strip().strip("`*_ ").strip()
    if value.strip() == WILDCARD or text == "":
        return WILDCARD if value.strip() == WILDCARD else None
    lowered = text.casefold()
    for layer in LAYERS:
        number, _, name = layer.partition("-")
        if lowered in (layer.casefold(), number, name.casefold()):
            return layer
    return None


@dataclass(frozen=True, slots=True)
class Scope:
    """Where a directive applies. Empty tuples mean "anywhere"."""

    globs: tuple[str, ...] = ()
    layers: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    frameworks: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RuleMeta:
    """What a rule file says about all of its statements (template Metadata, front matter)."""

    scope: Scope = Scope()
    topics: tuple[str, ...] = ()
    authoritative_for: tuple[str, ...] = ()
    severity: str | None = None
    conditions: tuple[str, ...] = ()
    description: str = ""  # a Cursor rule's ``description:``: when to use the whole file
    always_apply: bool = False


@dataclass(frozen=True, slots=True)
class ParsedDirective:
    """One rule statement (a list item or a paragraph) of a rule file; ``line`` is 1-based."""

    node_id: str
    text: str
    strength: Strength
    negated: bool
    line: int
    section: str
    meta: RuleMeta
    explicit: bool = False  # a [MUST]/[SHOULD]/[MAY] marker or an RFC 2119 keyword said so
    subject: str = field(default="", compare=False)
