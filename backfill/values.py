"""Reading one legacy value: tolerant where a value can be salvaged, explicit where it cannot.

SQLite stores whatever it is given, whatever the declared column type: a ``confidence REAL``
column may hold ``'high'``, a ``start_line INTEGER`` column ``'n/a'``, a ``TEXT`` column bytes
that are not UTF-8. Each reader below either returns a clean value, returns ``None`` and notes a
warning (optional data that could not be read: the row is still imported), or raises
:class:`RowRejected` with the reason (the row cannot be imported).
"""

from __future__ import annotations

import math
from typing import Any


class RowRejected(Exception):
    """This row cannot be imported; ``str(exc)`` is the reason shown to the operator."""


class Undecodable(bytes):
    """Text SQLite holds that is not valid UTF-8 (returned by :func:`decode_text`)."""


def decode_text(raw: bytes) -> str | Undecodable:
    """SQLite ``text_factory``: a bad byte sequence in one cell must not abort the whole read."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return Undecodable(raw)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def text(value: Any, column: str, *, required: bool = False) -> str | None:
    """A string; numbers are written out; NUL and undecodable text reject the row (PostgreSQL
    cannot store NUL, and guessing an encoding would change the record)."""
    if type(value) is str and "\x00" not in value and value and not value.isspace():
        return value  # the common case, first
    if isinstance(value, Undecodable):
        raise RowRejected(f"{column} is not valid UTF-8 text")
    if isinstance(value, bytes):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise RowRejected(f"{column} holds binary data, not text") from None
    if value is None:
        if required:
            raise RowRejected(f"{column} is NULL")
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    result = value if isinstance(value, str) else str(value)
    if "\x00" in result:
        raise RowRejected(f"{column} contains a NUL character, which PostgreSQL cannot store")
    if not result.strip():
        if required:
            raise RowRejected(f"{column} is empty")
        return None
    return result


def number(value: Any, column: str, warnings: list[str]) -> float | None:
    """A finite float from a number or numeric text (``'0.7'``, ``'85%'``); else ``None`` and a
    warning."""
    if value is None:
        return None
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str) and value.strip():
        raw = value.strip()
        try:
            result = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
        except ValueError:
            warnings.append(f"{column} {_show(value)} is not a number: imported without it")
            return None
    else:
        if not (isinstance(value, str) and not value.strip()):
            warnings.append(f"{column} {_show(value)} is not a number: imported without it")
        return None
    if not math.isfinite(result):
        warnings.append(f"{column} {_show(value)} is not finite: imported without it")
        return None
    return result


def integer(value: Any, column: str, warnings: list[str]) -> int | None:
    """An int from an integer, an integral float or digits in text; else ``None`` and a
    warning."""
    if value is None or isinstance(value, int):
        return value
    result = number(value, column, warnings)
    if result is None:
        return None
    if not result.is_integer():
        warnings.append(f"{column} {_show(value)} is not a whole number: imported without it")
        return None
    return int(result)


def confidence(value: Any, column: str, warnings: list[str]) -> float | None:
    """A confidence in [0, 1]; anything else is dropped with a warning (never rescaled)."""
    result = number(value, column, warnings)
    if result is not None and not 0.0 <= result <= 1.0:
        warnings.append(f"{column} {_show(value)} is outside 0..1: imported without it")
        return None
    return result


def json_value(value: Any) -> Any:
    """A value as it may go into an event's JSON properties (extra legacy columns)."""
    if isinstance(value, Undecodable | bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", "")
    return value
