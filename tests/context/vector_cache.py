"""Embedding vectors kept on disk between test runs, for tests that ingest real corpora with
MiniLM: the database's content-addressed ``embedding_cache`` (model id, content hash ->
vector) is copied out after the run and back into the next run's fresh database before it
ingests, so only new or changed text is embedded. Vectors depend on the text and the model
only, never on the code under test, so a cached vector is the vector the model would give.

The file lives in ``KG_TEST_VECTOR_CACHE`` (default ``/tmp/kg-test-vectors``), one per model.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import asyncpg

FOLDER = Path(os.environ.get("KG_TEST_VECTOR_CACHE", "/tmp/kg-test-vectors"))


def _file(model_id: str) -> Path:
    return FOLDER / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', model_id)}.copy"


def _kept(model_id: str) -> Path | None:
    path = _file(model_id)
    return path if path.is_file() else None


def _scratch(model_id: str) -> tuple[Path, Path]:
    FOLDER.mkdir(parents=True, exist_ok=True)
    path = _file(model_id)
    return path.with_suffix(f".{os.getpid()}.tmp"), path


async def restore_vectors(pool: asyncpg.Pool, model_id: str) -> int:
    """Load the kept vectors of ``model_id`` into an empty ``embedding_cache``."""
    path = _kept(model_id)
    if path is None:
        return 0
    async with pool.acquire() as conn:
        await conn.copy_to_table("embedding_cache", source=path, format="binary")
        count = "SELECT count(*) FROM embedding_cache WHERE model_id = $1"
        return int(await conn.fetchval(count, model_id))


async def save_vectors(pool: asyncpg.Pool, model_id: str) -> None:
    """Keep every vector of ``model_id`` the run's database holds (written whole, then
    renamed, so an interrupted run never leaves half a file)."""
    tmp, path = _scratch(model_id)
    query = "SELECT * FROM embedding_cache WHERE model_id = $1"
    async with pool.acquire() as conn:
        await conn.copy_from_query(query, model_id, output=tmp, format="binary")
    os.replace(tmp, path)
