"""The on-disk vector cache of the real-corpora tests (:mod:`tests.context.vector_cache`) with
several writers: parallel workers and other checkouts' suites share ``/tmp/kg-test-vectors``.
A writer never drops the vectors another kept since its database restored the file."""

from __future__ import annotations

import asyncio
import fcntl
import os
from pathlib import Path

import asyncpg
import pytest

from tests.context import vector_cache

MODEL = "test-model"


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(vector_cache, "FOLDER", tmp_path)
    return tmp_path


def _vector(seed: int) -> str:
    return "[" + ",".join(str((seed + i) % 7 / 7) for i in range(384)) + "]"


async def _hold(pool: asyncpg.Pool, *hashes: str) -> None:
    """The database's cache holds exactly ``hashes`` (of MODEL)."""
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM embedding_cache")
        await conn.executemany(
            "INSERT INTO embedding_cache (model_id, content_hash, embedding) "
            "VALUES ($1, $2, $3::vector)",
            [(MODEL, h, _vector(i)) for i, h in enumerate(hashes)],
        )


async def _write_as_another_run(pool: asyncpg.Pool, *hashes: str) -> None:
    """The file as another run's writer leaves it: ``hashes`` only, written whole."""
    path = vector_cache._file(MODEL)
    scratch = path.with_suffix(".other.tmp")
    rows = ", ".join(f"('{MODEL}', '{h}', '{_vector(i)}'::vector)" for i, h in enumerate(hashes))
    async with pool.acquire() as conn:
        await conn.copy_from_query(
            f"SELECT * FROM (VALUES {rows}) v", output=scratch, format="binary"
        )
    os.replace(scratch, path)


async def _kept(pool: asyncpg.Pool) -> set[str]:
    """The content hashes the file holds, as a fresh database restores them."""
    async with pool.acquire() as conn:
        await conn.execute("DELETE FROM embedding_cache")
    assert await vector_cache.restore_vectors(pool, MODEL) > 0
    async with pool.acquire() as conn:
        return {
            r["content_hash"] for r in await conn.fetch("SELECT content_hash FROM embedding_cache")
        }


async def test_a_writer_keeps_what_another_run_wrote_since(system_pool: asyncpg.Pool) -> None:
    await _hold(system_pool, "a")
    await vector_cache.save_vectors(system_pool, MODEL)
    assert await _kept(system_pool) == {"a"}

    await _write_as_another_run(system_pool, "a", "c")  # after this database restored {a}
    await _hold(system_pool, "a", "b")
    await vector_cache.save_vectors(system_pool, MODEL)
    assert await _kept(system_pool) == {"a", "b", "c"}


async def test_a_writer_never_restored_merges_the_file(system_pool: asyncpg.Pool) -> None:
    await _write_as_another_run(system_pool, "x")
    await _hold(system_pool, "y")
    await vector_cache.save_vectors(system_pool, MODEL)
    assert await _kept(system_pool) == {"x", "y"}


async def test_a_writer_waits_for_the_one_writing_and_merges_what_it_wrote(
    system_pool: asyncpg.Pool, folder: Path
) -> None:
    await _hold(system_pool, "a")
    await vector_cache.save_vectors(system_pool, MODEL)
    await _hold(system_pool, "a", "b")
    with (folder / f"{MODEL}.lock").open("a") as other:  # another writer holds the lock
        fcntl.flock(other, fcntl.LOCK_EX)
        saving = asyncio.create_task(vector_cache.save_vectors(system_pool, MODEL))
        await asyncio.sleep(0.3)
        assert not saving.done()
        await _write_as_another_run(system_pool, "a", "c")
        fcntl.flock(other, fcntl.LOCK_UN)
    await saving
    assert await _kept(system_pool) == {"a", "b", "c"}


async def test_a_writer_with_nothing_new_leaves_the_file_as_it_is(
    system_pool: asyncpg.Pool,
) -> None:
    await _write_as_another_run(system_pool, "a", "b")
    assert await _kept(system_pool) == {"a", "b"}  # this database restored the file
    before = vector_cache._file(MODEL).stat()
    await vector_cache.save_vectors(system_pool, MODEL)  # nothing embedded since
    after = vector_cache._file(MODEL).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)

    async with system_pool.acquire() as conn:  # one new vector: written
        await conn.execute(
            "INSERT INTO embedding_cache (model_id, content_hash, embedding) "
            "VALUES ($1, 'c', $2::vector)",
            MODEL, _vector(3),
        )  # fmt: skip
    await vector_cache.save_vectors(system_pool, MODEL)
    assert vector_cache._file(MODEL).stat().st_ino != before.st_ino
    assert await _kept(system_pool) == {"a", "b", "c"}
