"""Does the task ask for the project's documents or for its code?

"Why did we choose X", "what must Y do", "can I ..." and "what did we decide" are answered by
specs, decisions and rules; "where is X implemented", "which function parses Y" by code. On
real repositories nearly half of a build's first picks were functions and tests when the
question asked about a decision or a rule (issue 31): code shares the task's words (its
identifiers, its comments) without stating why. So a task that asks for the documents ranks
code at :data:`CODE_FACTOR_FOR_DOCS` of its score, and one that asks for code ranks documents
the same way; a task that says neither is left alone. Decided from the wording of the task
alone, never from a project's folder names.
"""

from __future__ import annotations

import re
from typing import Literal

from kg.ingest.code.model import CODE_LABEL

Intent = Literal["docs", "code"] | None

# A code node that answers a documents question is rare but possible (a constant's value):
# it stays a candidate, below the documents that match as well.
CODE_FACTOR_FOR_DOCS = 0.5
DOCS_FACTOR_FOR_CODE = 0.7

_CODE_ASK = re.compile(
    r"\b(?:where\s+(?:is|are|do|does)\b[^?]*\b(?:implemented|defined|declared|called|"
    r"handled|parsed|registered|computed)|"
    r"which\s+(?:function|method|class|struct|module)s?\b|"
    r"(?:in|from)\s+which\s+(?:function|method|class|module|file)|"
    r"how\s+(?:is|are|does)\b[^?]*\bimplemented|"
    r"(?:show|find)\s+(?:me\s+)?the\s+(?:code|implementation|function|class)|"
    r"implementation\s+of|call\s+sites?|who\s+calls|signature\s+of)",
    re.IGNORECASE,
)
_DOCS_ASK = re.compile(
    r"(?:^|[.?!]\s+)(?:why\b|should\b|must\b|may\b|can\s+i\b|is\s+it\s+(?:ok|okay|safe|"
    r"allowed|fine)\b|am\s+i\s+allowed\b|are\s+we\s+allowed\b)|"
    r"\b(?:why|what\s+did\s+we\s+(?:decide|choose|pick|agree)|decided|decision|rationale|"
    r"should|can\s+i|may\s+i|am\s+i\s+allowed|(?:is|are)\s+(?:it|they|we)\s+(?:ok|okay|safe|"
    r"allowed|fine|expected)|"
    r"rule|rules|policy|principle|convention|conventions|guideline|guidelines|"
    r"requirement|requirements|allowed|mandatory|must|supposed\s+to|"
    r"what\s+(?:should|must)|how\s+should|do\s+we\s+(?:use|allow|need|have\s+to)|"
    r"what\s+(?:is|are)\s+the\s+(?:steps|process|workflow))\b",
    re.IGNORECASE,
)


def task_intent(task: str | None) -> Intent:
    """``"code"`` when the task asks where or how something is implemented, ``"docs"`` when
    it asks why, what must or may be, or what was decided; ``None`` when it says neither (or
    both: "why does parse_x call y" wants both)."""
    if not task:
        return None
    code = bool(_CODE_ASK.search(task))
    docs = bool(_DOCS_ASK.search(task))
    if code == docs:
        return None
    return "code" if code else "docs"


def intent_factor(labels: tuple[str, ...], intent: Intent) -> float:
    """The share of its score a node keeps for a task of this intent."""
    if intent is None:
        return 1.0
    is_code = CODE_LABEL in labels
    if intent == "docs":
        return CODE_FACTOR_FOR_DOCS if is_code else 1.0
    return 1.0 if is_code else DOCS_FACTOR_FOR_CODE
