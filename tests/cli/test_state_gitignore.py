"""kg's state never reaches git: the live database folder, sync state, logs and locks are
ignored, while the configuration in ``.kg/`` meant to be versioned stays trackable."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import kg


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_kg_init_on_the_embedded_server_leaves_nothing_of_the_database_to_commit(
    project_dir: Path,
) -> None:
    repo = project_dir / "repo"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "README.md").write_text("# A project\n")
    env = {k: v for k, v in os.environ.items() if k != "KG_DATABASE_URL"}
    # A user's first `kg init` (initdb included), not a copy of the suite's template.
    env |= {"KG_EMBEDDER": "hashing", "KG_PROJECT_ROOT": str(repo), "KG_EMBEDDED_TEMPLATE": ""}

    out = kg("init", env=env, cwd=repo)
    assert out.returncode == 0, out.stderr
    assert "ignored by git" in out.stdout
    (repo / ".kg" / "schema.yaml").write_text("node_types: {}\n")
    (repo / ".kg" / "policies").mkdir()
    (repo / ".kg" / "policies" / "legal.yaml").write_text("policies: []\n")
    (repo / ".kg" / "sync-state.json").write_text("{}")

    git("add", "-A", cwd=repo)
    staged = set(git("diff", "--cached", "--name-only", cwd=repo).split())

    assert (repo / ".kg" / "pgdata").is_dir()
    assert staged == {
        "README.md",
        ".kg/.gitignore",
        ".kg/schema.yaml",
        ".kg/policies/legal.yaml",
    }


def test_an_existing_state_folder_gets_its_gitignore_on_the_next_command(
    tmp_path: Path, db_url: str
) -> None:
    state = tmp_path / ".kg"
    state.mkdir()
    (state / "hooks.log").write_text("old kg, no .gitignore\n")
    env = {**os.environ, "KG_DATABASE_URL": db_url, "KG_PROJECT_ROOT": str(tmp_path)}

    out = kg("status", env=env, cwd=tmp_path)

    assert out.returncode == 0, out.stderr
    assert (state / ".gitignore").read_text().splitlines()[2] == "*"
