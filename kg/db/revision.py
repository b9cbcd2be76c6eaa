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
