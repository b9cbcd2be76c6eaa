"""Path globs as rule files write them: ``**/*.py``, ``src/{api,web}/**``, ``*.[jt]s``.

``**`` crosses folders, ``*`` and ``?`` stay in one, ``{a,b}`` is an alternation and ``[...]``
a character class. A glob is matched against the whole project-relative path; one without a
``/`` (``*.py``) matches the file name in any folder, as in ``.gitignore`` and Cursor rules.
"""

from __future__ import annotations

import re
from functools import lru_cache


class GlobError(ValueError):
    """A glob that cannot be compiled; the message says what is wrong with it."""


@lru_cache(maxsize=4096)
def compile_glob(glob: str) -> re.Pattern[str]:
    text = glob.strip()
    if not text:
        raise GlobError("empty glob")
    text = text.removeprefix("./").removeprefix("/")
    if "/" not in text.rstrip("/"):
        text = "**/" + text
    if text.endswith("/"):
        text += "**"
    return re.compile(_translate(text, glob), re.IGNORECASE)


def _translate(text: str, shown: str) -> str:
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif text.startswith("**", i):
            out.append(".*")
            i += 2
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        elif text[i] == "[":
            end = text.find("]", i + 2)
            if end < 0:
                raise GlobError(f"glob {shown!r}: '[' at {i + 1} is never closed")
            body = text[i + 1 : end]
            negate = body.startswith(("!", "^"))
            body = body[1:] if negate else body
            out.append("[" + ("^" if negate else "") + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif text[i] == "{":
            depth += 1
            out.append("(?:")
            i += 1
        elif text[i] == "}":
            if depth == 0:
                raise GlobError(f"glob {shown!r}: '}}' at {i + 1} has no '{{'")
            depth -= 1
            out.append(")")
            i += 1
        elif text[i] == "," and depth:
            out.append("|")
            i += 1
        else:
            out.append(re.escape(text[i]))
            i += 1
    if depth:
        raise GlobError(f"glob {shown!r}: '{{' is never closed")
    return "".join(out)


def glob_matches(glob: str, relpath: str) -> bool:
    return compile_glob(glob).fullmatch(relpath) is not None
