"""What the graph holds of the repository's code, read in a few batched queries: the source
files ingested, their symbols (for resolving the calls of changed files) and the files whose
references use given names (to re-link them when those names appear or disappear)."""

from __future__ import annotations

from collections.abc import Sequence

import asyncpg

from kg.config import Scope
from kg.ingest.code.model import CLASS, CODE_LABEL, FILE, FUNCTION, METHOD
from kg.ingest.code.resolve import Entry

_SYMBOL_TYPES = [CLASS, FUNCTION, METHOD]


async def code_files(conn: asyncpg.Connection, scope: Scope) -> list[str]:
    """Project-relative paths of every source file ingested."""
    rows = await conn.fetch(
        "SELECT properties ->> 'path' AS path FROM kg_nodes "
        "WHERE tenant_id = $1 AND project_id = $2 AND node_type = $3 "
        "AND labels @> ARRAY[$4]::text[] AND node_id LIKE 'document:%'",
        scope.tenant_id,
        scope.project_id,
        FILE,
        CODE_LABEL,
    )
    return sorted(r["path"] for r in rows if r["path"])


async def symbols(
    conn: asyncpg.Connection,
    scope: Scope,
    names: Sequence[str] | None = None,
    paths: Sequence[str] | None = None,
) -> list[Entry]:
    """Classes, functions and methods ingestion made, as the resolver sees it: all of them
    (``names`` None), or every class plus the symbols named ``names`` and those of ``paths``
    (what linking some files can use: a one-file sync reads a few rows, not the repository)."""
    where = ""
    args: list[object] = [scope.tenant_id, scope.project_id, _SYMBOL_TYPES, CODE_LABEL]
    if names is not None:
        where = (
            "AND (node_type = $5 OR properties ->> 'symbol' = ANY($6::text[]) "
            "OR properties ->> 'path' = ANY($7::text[]))"
        )
        args += [CLASS, list(names), list(paths or ())]
    rows = await conn.fetch(
        "SELECT node_id, node_type, properties ->> 'symbol' AS symbol, "
        "properties ->> 'class_name' AS class_name, properties ->> 'path' AS path, "
        "properties -> 'bases' AS bases, node_id LIKE 'class:%' AS is_class FROM kg_nodes "
        "WHERE tenant_id = $1 AND project_id = $2 AND node_type = ANY($3::text[]) "
        f"AND labels @> ARRAY[$4]::text[] {where}",
        *args,
    )
    out: list[Entry] = []
    for r in rows:
        if not r["symbol"] or not r["path"]:
            continue
        class_name = r["class_name"]
        if r["is_class"]:  # a nested class is scoped by its outer class (see entries_of)
            qualname = r["node_id"].split("#", 1)[1]
            head = qualname.rpartition(".")[0]
            class_name = head.rsplit(".", 1)[-1] if head else None
        bases = tuple(r["bases"]) if isinstance(r["bases"], list) else ()
        out.append(Entry(r["node_id"], r["symbol"], class_name, r["path"], r["node_type"], bases))
    return out


async def files_referring(
    conn: asyncpg.Connection, scope: Scope, names: Sequence[str]
) -> list[str]:
    """Source files whose calls, imports or bases use any of ``names`` (bare names)."""
    if not names:
        return []
    rows = await conn.fetch(
        "SELECT properties ->> 'path' AS path FROM kg_nodes "
        "WHERE tenant_id = $1 AND project_id = $2 AND node_type = $3 "
        "AND labels @> ARRAY[$4]::text[] AND properties -> 'refs' ?| $5::text[]",
        scope.tenant_id,
        scope.project_id,
        FILE,
        CODE_LABEL,
        list(names),
    )
    return sorted(r["path"] for r in rows if r["path"])


async def specs_mentioning(
    conn: asyncpg.Connection, scope: Scope, names: Sequence[str]
) -> list[str]:
    """Markdown files whose text names any of ``names`` at the end of inline code
    (```Checkout.pay```, ```shop/checkout.py```): re-parsed when those names come or go."""
    if not names:
        return []
    patterns = [f"%{_like(name)}`%" for name in names] + [f"%{_like(name)}()`%" for name in names]
    rows = await conn.fetch(
        "SELECT DISTINCT split_part(substr(node_id, 9), '#', 1) AS path FROM kg_nodes "
        "WHERE tenant_id = $1 AND project_id = $2 AND node_id LIKE 'section:%' "
        "AND content LIKE ANY($3::text[])",
        scope.tenant_id,
        scope.project_id,
        patterns,
    )
    return sorted(r["path"] for r in rows if r["path"])


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
