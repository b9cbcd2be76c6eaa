"""``kg sync`` and the post-commit hook when the database is not what the checkout last saw:
reset, replaced, or unresponsive. Real subprocesses, real git, a real PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from kg.db.urls import asyncpg_url
from tests.ingest.gitrepo import GIT_ENV, Repo
from tests.support import cli_env, kg


@pytest.fixture
def env(db_url: str) -> dict[str, str]:
    return {**cli_env(db_url), **GIT_ENV}


def documents(db_url: str) -> set[str]:
    with psycopg.connect(asyncpg_url(db_url)) as conn:
        rows = conn.execute(
            "SELECT node_id FROM kg_nodes WHERE node_id LIKE 'document:%'"
        ).fetchall()
    return {r[0].removeprefix("document:") for r in rows}


def test_a_reset_database_gets_a_full_scan(
    env: dict[str, str], db_url: str, tmp_path: Path
) -> None:
    repo = Repo(tmp_path, env)
    names = [f"docs/spec-{i}.md" for i in range(5)]
    for name in names:
        repo.write(name, f"# {name}\n\nText.\n")
    repo.commit()
    first = kg("sync", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert documents(db_url) == set(names)

    for step in (("db", "downgrade", "base", "--yes"), ("init",)):
        done = kg(*step, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert documents(db_url) == set()

    again = kg("sync", env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("sync: full scan ("), again.stdout
    assert "5 changed" in again.stdout, again.stdout
    assert documents(db_url) == set(names)
    assert kg("sync", env=env, cwd=tmp_path).stdout.startswith("sync: up to date at")
