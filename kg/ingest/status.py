"""Whether a document says it is no longer current, by generic, documented conventions.

* front matter ``status: deprecated | superseded | obsolete | replaced`` (any case), with an
  optional ``superseded_by:`` (also ``superseded-by``, ``replaced_by``, ``replaced-by``); a
  ``superseded_by`` alone implies ``superseded``;
* an ADR status (Michael Nygard's template and its descendants): a ``Status`` heading whose
  text starts with ``Superseded``/``Deprecated`` (``Superseded by [ADR-7](0007-x.md)``), or a
  ``Status: Superseded by ADR-7`` line (bold or not) before the first second-level heading.

The result goes into the document's and each of its sections' properties (``status``,
``superseded_by``: the successor's node id when it is a link to a Markdown file of the
project, else the text as written), so a context build can serve them as what they are.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

STALE_STATUSES = frozenset({"deprecated", "superseded", "obsolete", "replaced"})
_SUCCESSOR_KEYS = ("superseded_by", "superseded-by", "replaced_by", "replaced-by")
_STATUS_LINE = re.compile(
    r"^\W*status\W*:\W*(superseded|deprecated|obsolete|replaced)\b\W*(?:by\s+(.+))?$",
    re.IGNORECASE,
)
_STATUS_TEXT = re.compile(
    r"^\W*(superseded|deprecated|obsolete|replaced)\b\W*(?:by\s+(.+))?$", re.IGNORECASE
)
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)[^)]*\)")


def _successor(text: str | None) -> str | None:
    if not text:
        return None
    link = _LINK.search(text)
    value = link.group(2) if link else text
    value = value.strip().strip("*_`.").strip()
    return value[:300] or None


def front_matter_status(front_matter: Mapping[str, Any]) -> dict[str, str]:
    status = front_matter.get("status")
    successor = next((str(front_matter[k]) for k in _SUCCESSOR_KEYS if front_matter.get(k)), None)
    found: dict[str, str] = {}
    if isinstance(status, str) and status.strip().lower() in STALE_STATUSES:
        found["status"] = status.strip().lower()
    elif successor:
        found["status"] = "superseded"
    if found and successor:
        found["superseded_by"] = successor[:300]
    return found


def status_line(line: str, *, heading_is_status: bool = False) -> dict[str, str]:
    """``{"status": ..., "superseded_by": ...}`` for a status line, else ``{}``."""
    text = line.strip()
    match = (_STATUS_TEXT if heading_is_status else _STATUS_LINE).match(text)
    if match is None:
        return {}
    found = {"status": match.group(1).lower()}
    successor = _successor(match.group(2))
    if successor:
        found["superseded_by"] = successor
    return found
