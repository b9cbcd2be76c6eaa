"""Embedding vectors kept on disk between test runs, for tests that ingest real corpora with
MiniLM: the database's content-addressed ``embedding_cache`` (model id, content hash ->
vector) is copied out after the run and back into the next run's fresh database before it
ingests, so only new or changed text is embedded. Vectors depend on the text and the model
only, never on the code under test, so a cached vector is the vector the model would give.

The file lives in ``KG_TEST_VECTOR_CACHE`` (default ``/tmp/kg-test-vectors``), one per model.
Several runs may write it at once (parallel workers, other checkouts' suites): a writer holds
an exclusive lock on ``<file>.lock`` and, when the file is not the one its database restored,
writes the union of the file as it is then and its database's vectors, so no writer drops
vectors another wrote since it restored. A database that embedded nothing since it restored
writes nothing: the file is a union that only grows, so it already holds all of its vectors
(each of the four floor tests restores the whole file, and rewriting 70 MB four times per run
for no new vector was most of their save time).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import asyncpg

FOLDER = Path(os.environ.get("KG_TEST_VECTOR_CACHE", "/tmp/kg-test-vectors"))


def _file(model_id: str) -> Path:
    return FOLDER / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', model_id)}.copy"


def _kept(model_id: str) -> Path | None:
    path = _file(model_id)
    return path if path.is_file() else None


# The file (inode, modification time) each database last restored or wrote: while it is still
# the file, the database holds all of it and a save need not merge it.
_restored: dict[str, tuple[int, int]] = {}
# The model's vectors each database held when it last restored or wrote the file: a run's cache
# only gains rows, so the same count means nothing new to keep.
_held: dict[tuple[str, str], int] = {}


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_ino, st.st_mtime_ns


async def _database(conn: asyncpg.Connection) -> str:
    """The database, as one name across servers and their restarts."""
    return str(await conn.fetchval("SELECT current_database() || pg_postmaster_start_time()"))


def _scratch(model_id: str) -> tuple[Path, Path]:
    FOLDER.mkdir(parents=True, exist_ok=True)
    path = _file(model_id)
    return path.with_suffix(f".{os.getpid()}.tmp"), path


async def restore_vectors(pool: asyncpg.Pool, model_id: str) -> int:
    """Load the kept vectors of ``model_id`` into an empty ``embedding_cache``."""
    path = _kept(model_id)
    if path is None:
        return 0
    with path.open("rb") as kept:  # the file as opened, even if a writer replaces it now
        async with pool.acquire() as conn:
            await conn.copy_to_table("embedding_cache", source=kept, format="binary")
            database = await _database(conn)
            _restored[database] = _identity(os.fstat(kept.fileno()))
            _held[database, model_id] = await _count(conn, model_id)
            return _held[database, model_id]


async def _count(conn: asyncpg.Connection, model_id: str) -> int:
    return int(
        await conn.fetchval("SELECT count(*) FROM embedding_cache WHERE model_id = $1", model_id)
    )


@asynccontextmanager
async def _writing(path: Path) -> AsyncIterator[None]:
    """Hold the exclusive lock of ``path``'s writers (released when the file closes, also by
    a killed process). Waited for in a thread: the event loop may run the writer holding it."""
    with path.with_suffix(".lock").open("a") as lock:
        await asyncio.to_thread(fcntl.flock, lock, fcntl.LOCK_EX)
        yield


async def save_vectors(pool: asyncpg.Pool, model_id: str) -> None:
    """Keep every vector of ``model_id`` the run's database holds, with those the file holds
    now (written whole, then renamed, so an interrupted run never leaves half a file and a
    reader always sees a whole one). Nothing is written when the database holds no vector
    it did not restore or write before."""
    async with pool.acquire() as conn:
        database = await _database(conn)
        if _held.get((database, model_id)) == await _count(conn, model_id):
            return
    tmp, path = _scratch(model_id)
    query = "SELECT * FROM embedding_cache WHERE model_id = $1"
    async with _writing(path):
        async with pool.acquire() as conn, conn.transaction():
            database = await _database(conn)
            if path.is_file() and _identity(path.stat()) != _restored.get(database):
                # Vectors another writer kept since this database restored: merged, not lost.
                await conn.execute(
                    "CREATE TEMPORARY TABLE kept_vectors (LIKE embedding_cache) ON COMMIT DROP"
                )
                await conn.copy_to_table("kept_vectors", source=path, format="binary")
                await conn.execute(
                    "INSERT INTO embedding_cache SELECT * FROM kept_vectors ON CONFLICT DO NOTHING"
                )
            await conn.copy_from_query(query, model_id, output=tmp, format="binary")
            held = await _count(conn, model_id)
        os.replace(tmp, path)
        _restored[database] = _identity(path.stat())
        _held[database, model_id] = held
