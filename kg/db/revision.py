"""Schema revision checks without importing Alembic (which costs ~0.7 s of CLI start-up).

The head is read from the migration files' ``revision`` / ``down_revision`` lines; a test
checks it against Alembic's own answer, so the two cannot drift apart.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import asyncpg

_REVISION = re.compile(r'^revision\s*=\s*"([^"]+)"', re.M)
_DOWN = re.compile(r'^down_revision\s*=\s*(?:"([^"]+)"|None)', re.M)


def versions_dir() -> Path:
    import migrations

    return Path(migrations.__file__).resolve().parent / "versions"


@cache
def head_revision() -> str:
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in versions_dir().glob("*.py"):
        text = path.read_text(encoding="utf-8")
        rev, down = _REVISION.search(text), _DOWN.search(text)
        if rev:
            revisions.add(rev.group(1))
        if down and down.group(1):
            parents.add(down.group(1))
    heads = revisions - parents
    if len(heads) != 1:
        raise RuntimeError(f"migrations must have exactly one head, found {sorted(heads)}")
    return heads.pop()


async def current_revision(pool: asyncpg.Pool) -> str | None:
    try:  # one round trip on every command's start; a new database has no table yet
        value = await pool.fetchval("SELECT version_num FROM alembic_version")
    except asyncpg.UndefinedTableError:
        return None
    return str(value) if value is not None else None


async def is_at_head(url: str) -> bool:
    """Whether the database at ``url`` is already at :func:`head_revision` (one query, no
    Alembic): ``kg init`` and ``kg db upgrade`` on an up-to-date database, the everyday case,
    then skip Alembic's ~1 s of imports and start-up. False when it cannot tell (unreachable,
    no schema yet): the caller runs Alembic, which says what is wrong."""
    from kg.db.urls import asyncpg_url

    try:
        conn = await asyncpg.connect(asyncpg_url(url), timeout=10)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError):
        return False
    try:
        value = await conn.fetchval("SELECT version_num FROM alembic_version")
    except asyncpg.PostgresError:
        return False
    finally:
        await conn.close()
    return value is not None and str(value) == head_revision()
