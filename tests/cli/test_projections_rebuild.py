"""``kg projections rebuild`` with another embedder than the index's, on a terminal: the cost
first, then a question; no re-embeds nothing (issue 30, item 6)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import asyncpg

from tests.support import cli_env, kg


def _on_a_terminal(args: list[str], env: dict[str, str], cwd: Path, answer: str) -> tuple[int, str]:
    """``kg ARGS`` with a pseudo-terminal as stdin, answering ``answer`` to its question."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kg.cli", *args],
            env={"COLUMNS": "200", **env}, cwd=cwd, stdin=slave,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        os.write(master, answer.encode() + b"\n")
        out, _ = proc.communicate(timeout=300)
    finally:
        os.close(slave)
        os.close(master)
    return proc.returncode, out


async def test_the_rebuild_shows_the_cost_and_asks_before_re_embedding(
    db_url: str, tmp_path: Path
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A\n\n## Retries\n\nRetry with backoff.\n")
    assert kg("ingest", "docs", env=cli_env(db_url), cwd=tmp_path).returncode == 0
    smaller = cli_env(db_url, KG_EMBEDDER_DIMENSIONS="256")  # hashing-v1-256: another model
    args = ["projections", "rebuild", "kg_nodes"]

    code, out = _on_a_terminal(args, smaller, tmp_path, "n")
    assert code == 1, out
    assert "the index holds vectors of hashing-v1-384; the configured embedder is " in out
    assert "hashing-v1-256: rebuilding kg_nodes embeds 3 text(s) not in the cache" in out
    assert "Re-embed the graph with the configured embedder?" in out
    assert "not rebuilt: nothing changed" in out
    conn = await asyncpg.connect(db_url)
    try:
        assert await conn.fetchval("SELECT model_id FROM kg_embedding_index") == "hashing-v1-384"
        code, out = _on_a_terminal(args, smaller, tmp_path, "y")
        assert code == 0, out
        assert "embedded 3 new texts" in out
        assert await conn.fetchval("SELECT model_id FROM kg_embedding_index") == "hashing-v1-256"
        assert (
            await conn.fetchval(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                "WHERE attrelid = 'kg_nodes'::regclass AND attname = 'embedding'"
            )
            == "vector(256)"
        )
    finally:
        await conn.close()
