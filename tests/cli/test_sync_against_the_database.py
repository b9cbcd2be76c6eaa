"""``kg sync`` and the post-commit hook when the database is not what the checkout last saw:
reset, replaced, or unresponsive. Real subprocesses, real git, a real PostgreSQL."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Iterator
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


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts every connection and never says a word: a database host that
    hangs (a stopped VM behind a live proxy, a wedged server). Yields its port."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)  # kept open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    listener.close()
    for conn in held:
        conn.close()


def test_a_database_that_never_answers_does_not_hold_up_a_commit(
    env: dict[str, str], tmp_path: Path, silent_server: int
) -> None:
    hanging = {**env, "KG_DATABASE_URL": f"postgresql://kg:kg@127.0.0.1:{silent_server}/kg"}
    repo = Repo(tmp_path, hanging)
    installed = kg("hooks", "install", env=hanging, cwd=tmp_path)
    assert installed.returncode == 0, installed.stderr
    repo.write("docs/a.md", "# A\n\nText.\n")
    repo.git("add", "-A")
    # The failure mode is this timeout: the hook used to wait 60 s for the connection.
    commit = subprocess.run(
        ["git", "commit", "-q", "-m", "spec"],
        cwd=tmp_path,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert commit.returncode == 0, commit.stderr
    assert repo.git("log", "--format=%s").stdout.split() == ["spec"], "the commit exists"
    said = [line for line in commit.stderr.splitlines() if line.startswith("kg:")]
    assert len(said) == 1, commit.stderr
    assert "sync skipped" in said[0] and "kg sync" in said[0], said[0]
    log = (tmp_path / ".kg/hooks.log").read_text()
    assert f"127.0.0.1:{silent_server}" in log, "the log says which database did not answer"
