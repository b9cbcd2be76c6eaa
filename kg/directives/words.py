"""Content words of a task or a condition, crudely stemmed, for condition matching."""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9][a-z0-9+#.-]*")
_STOP = frozenset(
    [
        "a", "an", "the", "to", "of", "in", "on", "for", "and", "or", "with", "by", "from", "at",
        "as", "is", "are", "be", "it", "this", "that", "when", "you", "your", "we", "our", "any",
        "every", "all", "into", "new", "its", "not", "do", "does", "add", "adding", "change",
        "changing", "make", "use", "using", "update", "updating", "write", "writing", "how",
        "can", "should", "must", "may", "or", "one", "two",
    ]
)  # fmt: skip


def words(text: str) -> frozenset[str]:
    """Content words, crudely stemmed (plural s, -ing, -ed, a final e), for condition matching:
    "handle", "handles" and "handling" are one word, as are "rule" and "rules"."""
    out = set()
    for w in _WORD.findall(text.casefold()):
        w = w.strip(".-")
        if len(w) < 2 or w in _STOP:
            continue
        for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)] + replacement
                break
        if w.endswith("e") and len(w) > 3:
            w = w[:-1]
        out.add(w)
    return frozenset(out)
