"""Path globs as the schema map and policy files write them: ``**/`` is zero or more folders,
``*`` and ``?`` stay within one folder. (Rule files' globs, with braces and classes as Cursor
writes them, are :mod:`kg.directives.globs`.)"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=1024)
def glob_to_regex(glob: str, *, ignore_case: bool = False) -> re.Pattern[str]:
    """Compile ``glob`` once; match with ``fullmatch`` against a project-relative path."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out), re.IGNORECASE if ignore_case else 0)
