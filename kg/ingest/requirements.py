"""Requirement ids in prose: ``FR13``, ``FR-13``, ``nfr-2``, ``FR-13.2`` and their canonical form.

The canonical form is the uppercase prefix, a dash and the number with leading zeros removed
(``FR-013`` and ``FR13`` are both ``FR-13``), so every spelling of one requirement meets at
one node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

DEFAULT_PREFIXES: tuple[str, ...] = ("FR", "NFR")


@dataclass(frozen=True, slots=True)
class RequirementMatch:
    canonical: str
    raw: str
    start: int = 0


class RequirementMatcher:
    """Finds requirement ids with a configurable set of prefixes (case-insensitive)."""

    __slots__ = ("_pattern", "_start")

    def __init__(self, prefixes: Iterable[str] = DEFAULT_PREFIXES) -> None:
        # Longest prefix first so that e.g. ``NFR`` wins over a hypothetical ``N``.
        ordered = sorted({p.upper() for p in prefixes}, key=lambda p: (-len(p), p))
        alternation = "|".join(re.escape(p) for p in ordered) or r"(?!)"
        body = rf"({alternation})-?(\d+(?:\.\d+)*)"
        # Letters, digits and "-" may not touch an id; "_" may (``_FR-1_`` is emphasis).
        self._pattern = re.compile(rf"(?<![^\W_])(?<!-){body}(?![^\W_])(?!-)", re.IGNORECASE)
        self._start = re.compile(rf"\s*{body}(?![^\W_])(?!-)", re.IGNORECASE)

    def find(self, text: str) -> Iterator[RequirementMatch]:
        for match in self._pattern.finditer(text):
            canonical = _canonical(match.group(1), match.group(2))
            yield RequirementMatch(canonical, match.group(0), match.start())

    def leading(self, text: str) -> RequirementMatch | None:
        """The requirement id a heading starts with (``FR-13: Login`` defines FR-13)."""
        match = self._start.match(text)
        if match is None:
            return None
        return RequirementMatch(_canonical(match.group(1), match.group(2)), match.group(0).strip())


def _canonical(prefix: str, number: str) -> str:
    return f"{prefix.upper()}-{'.'.join(str(int(part)) for part in number.split('.'))}"
