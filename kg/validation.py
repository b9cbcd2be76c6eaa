"""The one check for text that comes from outside (tool arguments, CLI options, file names).

PostgreSQL cannot store a NUL character in ``text`` or ``jsonb``, and a lone UTF-16 surrogate
(``\\ud800``) cannot be encoded as UTF-8 at all: either one used to surface deep inside asyncpg
as an unexplained failure. Oversized values cost time long before they fail (a 10 MB id was
parsed, looked up and echoed back whole). :func:`check_text` refuses all three with a
:class:`~kg.errors.ValidationError` naming the argument and the fix, and :func:`clip` bounds
what an error message repeats of a user's value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from pydantic import AfterValidator, Field

from kg.errors import ValidationError

# Limits for arguments without a tighter one of their own.
MAX_ID_CHARS = 1100  # node ids: a 40-character type, ':', up to 1000 characters (kg.events)
MAX_PATH_CHARS = 4096  # PATH_MAX on Linux
MAX_TEXT_CHARS = 20_000
CLIP_CHARS = 100

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def clip(value: object, limit: int = CLIP_CHARS) -> str:
    """``repr(value)``, cut to about ``limit`` characters with its full length said: what an
    error message may repeat of a value it did not choose."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}… ({len(text):,} characters)"


def unstorable_reason(value: str) -> str | None:
    """Why ``value`` cannot be stored or encoded, or None when it can."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    char, at = found.group(), found.start()
    if char == "\x00":
        return (
            f"contains a NUL character (\\x00) at character {at}, which PostgreSQL cannot "
            "store: remove it"
        )
    return (
        f"contains a lone UTF-16 surrogate (\\u{ord(char):04x}) at character {at}, which is "
        "not valid Unicode: send the text as valid UTF-8"
    )


def check_text(name: str, value: str, max_chars: int = MAX_TEXT_CHARS) -> str:
    """``value`` if it is storable text of at most ``max_chars`` characters.

    Raises:
        ValidationError: naming ``name``, what is wrong and the fix; never repeating more than
            :data:`CLIP_CHARS` characters of ``value``.
    """
    if len(value) > max_chars:
        raise ValidationError(
            f"{name} is {len(value):,} characters long; the limit is {max_chars:,}: shorten it"
        )
    reason = unstorable_reason(value)
    if reason is not None:
        raise ValidationError(f"{name} {reason}")
    return value


def check_texts(name: str, values: Iterable[str], max_chars: int = MAX_ID_CHARS) -> None:
    """:func:`check_text` for each item, named ``name[i]``."""
    for i, value in enumerate(values):
        check_text(f"{name}[{i}]", value, max_chars)


def without_controls(value: str) -> str:
    """``value`` with control characters and lone surrogates made spaces, whitespace runs
    collapsed: for names recorded as they come (an MCP client's name), where refusing would
    lock the client out."""
    return " ".join(_CONTROL.sub(" ", value).split())


def ensure_storable(value: str) -> str:
    """:func:`unstorable_reason` as a pydantic validator (pydantic names the field)."""
    reason = unstorable_reason(value)
    if reason is not None:
        raise ValueError(reason)
    return value


# For pydantic models and MCP tool signatures: the length is checked first (so a 10 MB value
# is refused without being scanned), then the characters. Constraints added around these
# aliases would apply after the scan, so each bound has its alias.
_STORABLE = AfterValidator(ensure_storable)
IdStr = Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS), _STORABLE]
PathStr = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS), _STORABLE]
ShortStr = Annotated[str, Field(min_length=1, max_length=200), _STORABLE]
TypeStr = Annotated[str, Field(min_length=1, max_length=100), _STORABLE]
UsageStr = Annotated[str, Field(min_length=1, max_length=50), _STORABLE]
QueryStr = Annotated[str, Field(max_length=4000), _STORABLE]
LongStr = Annotated[str, Field(max_length=MAX_TEXT_CHARS), _STORABLE]


def clip_many(values: Iterable[str], shown: int = 5) -> str:
    """Up to ``shown`` values, each :func:`clip`\\ ped, and how many more there were."""
    items = list(values)
    # Short printable ids read best bare (as before); anything else is clipped and quoted.
    text = ", ".join(
        v if len(v) <= CLIP_CHARS and v.isprintable() else clip(v) for v in items[:shown]
    )
    return text if len(items) <= shown else f"{text} and {len(items) - shown} more"


MAX_MESSAGE_CHARS = 2000


def bounded(message: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``message`` cut to ``limit`` characters: the last guard on what an error repeats (each
    message clips the values it names; a list of many problems can still grow long)."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message) - limit:,} more characters)"
