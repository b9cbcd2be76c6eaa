"""A statement's strength: an explicit ``[MUST]``/``[SHOULD]``/``[MAY]`` marker, else its
RFC 2119 keywords, with the imperatives "never", "always", "do not" read as MUST.

The strongest keyword found wins (a sentence with both "must" and "may" is a MUST). A
statement with no keyword at all is a SHOULD, and ``explicit`` says so. Negations ("must
not", "never", "do not", "avoid") set ``negated``, which the conflict check uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kg.directives.config import DEFAULT_CONFIG, DirectiveConfig
from kg.directives.model import Strength

MARKER = re.compile(
    r"^\s*(?:\*\*|__)?\[(MUST(?: NOT)?|SHALL(?: NOT)?|SHOULD(?: NOT)?|MAY|REQUIRED|"
    r"RECOMMENDED|OPTIONAL)\](?:\*\*|__)?:?\s*",
    re.IGNORECASE,
)
_MUST = ("must", "must not", "shall", "shall not", "required", "never", "always", "do not",
         "don't", "mandatory", "forbidden", "prohibited")  # fmt: skip
_SHOULD = ("should", "should not", "recommended", "prefer", "avoid", "shouldn't")
_MAY = ("may", "optional", "optionally", "can", "is allowed to", "feel free")
_NEGATIONS = re.compile(
    r"\b(?:must not|mustn't|shall not|should not|shouldn't|never|do not|don't|avoid|no longer"
    r"|forbidden|prohibited)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Reading:
    strength: Strength
    negated: bool
    explicit: bool
    text: str  # the statement without its marker


_LEADING_NEGATION = re.compile(r"^(?:never|do not|don't|no|not|avoid)\b", re.IGNORECASE)


def _with_not(rest: str) -> str:
    """The statement of a ``[MUST NOT]`` with its negation written out: served under its
    strength's heading, "Name a denied node" would say the opposite of the rule."""
    if not rest or _LEADING_NEGATION.match(rest):
        return rest
    first, _, tail = rest.partition(" ")
    if len(first) > 1 and not first[1:].islower():
        return f"Do not: {rest}"  # an acronym or a name: not a verb to lower-case
    return f"Do not {first[:1].lower()}{first[1:]}" + (f" {tail}" if tail else "")


def _pattern(words: tuple[str, ...]) -> re.Pattern[str]:
    ordered = sorted(set(words), key=lambda w: (-len(w), w))
    return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in ordered) + r")\b", re.IGNORECASE)


class StrengthReader:
    """Reads strengths with the built-in words plus a project's own (:class:`DirectiveConfig`)."""

    def __init__(self, config: DirectiveConfig = DEFAULT_CONFIG) -> None:
        self._must = _pattern(_MUST + config.must_words)
        self._should = _pattern(_SHOULD + config.should_words)
        self._may = _pattern(_MAY + config.may_words)

    def read(self, statement: str) -> Reading:
        marker = MARKER.match(statement)
        if marker is not None:
            word = marker.group(1).upper()
            rest = statement[marker.end() :].strip()
            negated = word.endswith(" NOT") or bool(_NEGATIONS.search(rest))
            if word.endswith(" NOT"):
                rest = _with_not(rest)
            strength: Strength
            if word.startswith(("MUST", "SHALL", "REQUIRED")):
                strength = "MUST"
            elif word.startswith(("SHOULD", "RECOMMENDED")):
                strength = "SHOULD"
            else:
                strength = "MAY"
            return Reading(strength, negated, True, rest)
        text = statement.strip()
        negated = bool(_NEGATIONS.search(text))
        if self._must.search(text):
            return Reading("MUST", negated, True, text)
        if self._should.search(text):
            return Reading("SHOULD", negated, True, text)
        if self._may.search(text):
            return Reading("MAY", negated, True, text)
        return Reading("SHOULD", negated, False, text)
