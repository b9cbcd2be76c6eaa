"""JSON text from PostgreSQL decoded into Python values: the one decoder of the read path
(the pools' jsonb codec, and events whose payload was fetched as text)."""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# A number of 19 digits or more: maybe an integer beyond 64 bits, which orjson reads as a float
# (2**70 would come back rounded, and its event would fail `kg audit verify`). Inside an array
# or object a number follows ``:``, ``[`` or ``,`` (PostgreSQL writes a space after ``:`` and
# ``,``); anchoring the pattern there makes the scan twice as fast as a bare run of digits,
# which also stopped at every hash and id. A text that is one number is checked apart.
_LONG_NUMBER = re.compile(r"[:\[,]\s*-?[0-9]{19}")


def decode_json(text: str) -> Any:
    """JSON text from PostgreSQL as Python values. orjson is several times faster on the read
    path; the stdlib reads what orjson would refuse or round (a long number, or what looks
    like one inside a string, only costs speed)."""
    if _LONG_NUMBER.search(text) is None and not text[:1].isdigit() and text[:1] != "-":
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
