"""Naming code the way a developer does: ``src/shop/checkout.py:42`` (the innermost class,
function or method whose lines include 42, else the file) or ``src/shop/checkout.py`` (the
file). Anything else is returned unchanged, so node ids pass straight through.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import asyncpg

from kg.config import Scope
from kg.languages import is_source

_PATH_LINE = re.compile(r"^(?P<path>[^:#\s][^:#]*?)(?::(?P<line>\d{1,7}))?$")


def is_code_location(text: str) -> bool:
    match = _PATH_LINE.match(text.strip())
    return match is not None and is_source(match.group("path"))


async def resolve_code_anchors(
    conn: asyncpg.Connection, scope: Scope, anchors: Sequence[str]
) -> tuple[str, ...]:
    """``anchors`` with every code location replaced by the node id it names (one query per
    location: anchors are few). A path without a line, or a line outside every symbol, names
    the file (which need not be ingested: a build then says the anchor is unknown)."""
    out: list[str] = []
    for anchor in anchors:
        match = _PATH_LINE.match(anchor.strip())
        if match is None or not is_source(match.group("path")):
            out.append(anchor)
            continue
        path = match.group("path").removeprefix("./")
        line = match.group("line")
        found = None
        if line is not None:
            found = await conn.fetchval(
                """
                SELECT node_id FROM kg_nodes
                 WHERE tenant_id = $1 AND project_id = $2
                   AND ((node_id >= $3 AND node_id < $4) OR (node_id >= $5 AND node_id < $6))
                   AND (properties ->> 'start_line')::int <= $7
                   AND (properties ->> 'end_line')::int >= $7
                 ORDER BY (properties ->> 'start_line')::int DESC,
                          (properties ->> 'end_line')::int ASC, node_id
                 LIMIT 1
                """,
                scope.tenant_id,
                scope.project_id,
                f"function:{path}#",
                f"function:{path}$",  # '$' sorts right after '#': the range is one file's
                f"class:{path}#",
                f"class:{path}$",
                int(line),
            )
        out.append(found or f"document:{path}")
    return tuple(out)
