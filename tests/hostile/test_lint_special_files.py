"""``kg lint`` and the ``lint_graph`` tool read only what kg may read (issue 30, A3).

Ingest refused symlinks out of the project and special files, but lint's secret scan re-read
every path itself: ``docs/z.md -> /dev/zero`` grew ``kg lint`` until the kernel killed it, a
FIFO named ``*.md`` hung it (and the MCP call) forever, and a symlink to a file outside the
project had that file's secrets reported. Every reader now goes through
:mod:`kg.project_files`. The commands run under an address-space limit and a timeout, so the
old behaviour fails the test instead of taking the machine or the suite with it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.mcp.client import server_env, stdio_session

MEMORY_LIMIT = 3 << 30
SECRET = "aws_key = AKIAIOSFODNN7EXAMPLF\n"


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs").mkdir(parents=True)
    (root / "docs/a.md").write_text("# A\n\nPlain text.\n")
    return root


def zero(root: Path, outside: Path) -> str:
    (root / "docs/z.md").symlink_to("/dev/zero")
    return "docs/z.md"


def fifo(root: Path, outside: Path) -> str:
    os.mkfifo(root / "docs/pipe.md")
    return "docs/pipe.md"


def leak(root: Path, outside: Path) -> str:
    outside.mkdir()
    (outside / "keys.md").write_text("# Keys\n\n" + SECRET)
    (root / "docs/leak.md").symlink_to(outside / "keys.md")
    return "docs/leak.md"


HAZARDS = [
    pytest.param(zero, "outside the project root", id="symlink-to-dev-zero"),
    pytest.param(fifo, "not a regular file", id="fifo-named-md"),
    pytest.param(leak, "outside the project root", id="symlink-to-a-secret-outside"),
]


@pytest.mark.parametrize(("plant", "refusal"), HAZARDS)
def test_kg_lint_refuses_the_file_and_reads_nothing_through_it(
    tmp_path: Path, plant: Callable[[Path, Path], str], refusal: str
) -> None:
    root = project(tmp_path)
    rel = plant(root, tmp_path / "outside")
    env = {k: v for k, v in os.environ.items() if k != "KG_DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "kg.cli", "lint"],
        env={**env, "KG_PROJECT_ROOT": str(root), "COLUMNS": "200"},
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,  # a FIFO used to block the read forever
        preexec_fn=limited,  # /dev/zero used to be read until memory ran out
    )
    out = done.stdout + done.stderr
    assert "Traceback" not in out and "MemoryError" not in out, out
    assert done.returncode == 1, out
    assert f"{rel}:1: refused" in out and refusal in out, out
    assert "possible secret" not in out, "nothing outside the project was scanned"
    assert "AKIA" not in out


async def test_the_lint_graph_tool_refuses_a_fifo_and_a_symlink_out(
    db_url: str, tmp_path: Path
) -> None:
    root = project(tmp_path)
    fifo(root, tmp_path)
    leak(root, tmp_path / "outside")
    env = {**server_env(db_url), "KG_PROJECT_ROOT": str(root)}
    async with stdio_session(env, root) as session:
        result = await session.call_tool("lint_graph", {})
    assert not result.is_error, result.content
    problems = {(p["path"], p["message"]) for p in (result.structured_content or {})["problems"]}
    assert any(p == "docs/pipe.md" and "not a regular file" in m for p, m in problems), problems
    assert any(p == "docs/leak.md" and "outside the project root" in m for p, m in problems)
    assert not any("secret" in m for _, m in problems), problems
