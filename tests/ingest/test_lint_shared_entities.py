"""Extracted entities are shared across files by design: lint and the pre-commit hook must not
call them duplicates (issue 30, item 3). A copy of ``examples/api`` (entities switched on, the
same API objects named on several pages) under ``git init`` failed ``kg lint`` with 4
``duplicate node id apiobject:...`` errors, and the pre-commit hook then blocked commits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support import cli_env, kg

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "api"


def git(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, env=env)


def test_a_copy_of_the_api_example_lints_clean_and_commits(db_url: str, tmp_path: Path) -> None:
    root = tmp_path / "api"
    shutil.copytree(EXAMPLE, root)
    env = cli_env(db_url, KG_PROJECT_ROOT=str(root))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")

    linted = kg("lint", env=env, cwd=root)
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "duplicate node id" not in linted.stdout + linted.stderr

    assert kg("hooks", "install", env=env, cwd=root).returncode == 0
    git(root, "add", "-A")
    committed = git(root, "commit", "-q", "-m", "api docs", env=env)
    assert committed.returncode == 0, committed.stdout + committed.stderr
    assert "duplicate node id" not in committed.stderr
