"""Trail output: JSON Lines (everything, payload included), CSV (the columns), Markdown (a table
for a report; pipes escaped, line breaks flattened)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import AsyncIterator
from typing import Any, TextIO

from kg.audit.trail import COLUMNS, TrailEntry
from kg.errors import ValidationError

FORMATS = ("jsonl", "csv", "md")
# The Markdown table leaves out the identifiers a reader does not scan for.
_MD_COLUMNS = tuple(c for c in COLUMNS if c not in ("stream_id", "event_id", "hash"))


def _md_cell(value: Any) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|")


async def write_trail(entries: AsyncIterator[TrailEntry], out: TextIO, fmt: str) -> int:
    """Write ``entries`` to ``out`` as they arrive; returns how many were written."""
    if fmt not in FORMATS:
        raise ValidationError(f"format {fmt!r} is unknown: use {', '.join(FORMATS)}")
    count = 0
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(COLUMNS)
    elif fmt == "md":
        out.write("| " + " | ".join(_MD_COLUMNS) + " |\n")
        out.write("|" + "|".join("---" for _ in _MD_COLUMNS) + "|\n")
    async for e in entries:
        count += 1
        if fmt == "jsonl":
            out.write(json.dumps(e.to_dict(), ensure_ascii=False, sort_keys=True) + "\n")
        elif fmt == "csv":
            writer.writerow(["" if v is None else v for v in e.row()])
        else:
            out.write("| " + " | ".join(_md_cell(getattr(e, c)) for c in _MD_COLUMNS) + " |\n")
    return count


async def render_trail(entries: AsyncIterator[TrailEntry], fmt: str) -> str:
    buffer = io.StringIO()
    await write_trail(entries, buffer, fmt)
    return buffer.getvalue()
