"""``kg ingest|sync|lint|inspect|new|hooks`` as a user runs them: subprocesses, real database."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kg.config import Scope
from kg.events import EventStore, PolicyDefined
from kg.policies.model import PolicyRule
from tests.ingest.gitrepo import GIT_ENV, Repo
from tests.support import cli_env, kg

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def env(db_url: str) -> dict[str, str]:
    return {**cli_env(db_url), **GIT_ENV}


@pytest.fixture
def examples(tmp_path: Path) -> Path:
    """A copy of the example project as a project root of its own."""
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    (root / ".kg").mkdir(exist_ok=True)  # the examples have one: their policy files
    return root


def test_lint_prints_file_line_message_and_exits_1_on_errors(
    env: dict[str, str], examples: Path
) -> None:
    out = kg("lint", env=env, cwd=examples)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        "docs/stories/lint-specs.md:20: dangling anchor (../architecture.md#git-hooks): "
        "no heading #git-hooks in docs/architecture.md"
    ]
    assert "1 errors, 0 warnings in 1 files" in out.stderr

    only = kg("lint", "docs/epics", env=env, cwd=examples)
    assert (only.returncode, only.stdout) == (0, "")
    assert "no problems found" in only.stderr
    from_subfolder = kg("lint", "lint-specs.md", env=env, cwd=examples / "docs/stories")
    assert from_subfolder.returncode == 1
    assert from_subfolder.stdout.startswith("docs/stories/lint-specs.md:20: dangling anchor")

    fixed = examples / "docs/stories/lint-specs.md"
    fixed.write_text(fixed.read_text().replace("#git-hooks", "#hooks"), encoding="utf-8")
    (examples / "docs/a.md").write_text("# A\n[[lint-specs]] [[LINT-SPECS]]\n")
    (examples / "docs/lint-specs.md").write_text("# Twin\n")
    warned = kg("lint", env=env, cwd=examples)
    assert warned.returncode == 0, "warnings do not fail lint"
    assert "docs/a.md:2: warning: wiki link [[lint-specs]] matches several files" in warned.stdout

    (examples / "docs/broken.md").write_bytes(b"---\ntitle: [x\n---\n# B\n\xff\n")
    broken = kg("lint", env=env, cwd=examples)
    assert broken.returncode == 1
    assert "docs/broken.md:5: invalid UTF-8 at byte offset 22: invalid start byte" in broken.stdout


def test_ingest_reports_changes_problems_and_exit_code(env: dict[str, str], examples: Path) -> None:
    first = kg("ingest", ".", env=env, cwd=examples)
    assert first.returncode == 0, first.stderr
    # 10 specs, the README, the 5 pages of the API example (examples/api), the 5 rule files
    assert "ingested 21 files: 21 changed, 0 unchanged, 0 removed, 0 failed" in first.stdout
    again = kg("ingest", "docs", env=env, cwd=examples)
    assert "12 files: 0 changed, 12 unchanged, 0 removed, 0 failed; 0 events" in again.stdout

    (examples / "docs/bad.md").write_bytes(b"# Bad\n\x00binary")
    (examples / "docs/stories/sync-on-commit.md").unlink()
    bad = kg("ingest", "docs", env=env, cwd=examples)
    assert bad.returncode == 0, "a binary file is skipped with a warning, not a failure"
    assert "0 changed, 11 unchanged, 1 removed, 0 failed, 1 skipped" in bad.stdout
    assert "docs/bad.md:2: warning: refused: binary file (NUL byte at offset 6)" in bad.stderr
    typo = kg("ingest", "docs/nope.md", env=env, cwd=examples)
    assert typo.returncode == 1
    assert "docs/nope.md:1: no such file (and nothing ingested from it)" in typo.stderr


async def test_inspect_shows_the_dependency_tree_without_denied_nodes(
    env: dict[str, str], examples: Path, store: EventStore, scope: Scope
) -> None:
    assert kg("ingest", ".", env=env, cwd=examples).returncode == 0
    out = kg("inspect", "docs/epics/spec-ingestion.md", env=env, cwd=examples)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "document:docs/epics/spec-ingestion.md (Epic) Spec ingestion"
    assert "├── CONTAINS → section:docs/epics/spec-ingestion.md#design (Section) Design" in lines
    assert any("REFERENCES → section:docs/architecture.md#ingestion (Section)" in x for x in lines)
    assert any("← REFERENCES section:docs/stories/lint-specs.md#" in x for x in lines)

    await store.append(
        scope,
        "policy:no-stories",
        [
            PolicyDefined(
                policy_id="policy:no-stories",
                name="Stories are off limits",
                rule=PolicyRule(effect="deny", node_types=("Story",)),
            )
        ],
    )
    denied = kg(
        "inspect", "document:docs/epics/spec-ingestion.md", "--depth", "2", env=env, cwd=examples
    )
    assert denied.returncode == 0, denied.stderr
    assert "(Story)" not in denied.stdout
    assert "document:docs/stories/" not in denied.stdout, "the story documents are denied"
    assert "section:docs/stories/" not in denied.stdout, "and so are their sections"
    assert "6 nodes excluded by policy" in denied.stdout  # the 3 stories and 3 sections

    req = kg("inspect", "FR4", "--direction", "in", "--depth", "1", env=env, cwd=examples)
    # FR4 names the PRD's FR-4, the one document defining it (### FR-4: Integrity lint).
    assert req.stdout.splitlines()[0] == "requirement:docs/prd.md#FR-4 (Requirement) FR-4"
    assert "DEFINES" in req.stdout
    missing = kg("inspect", "docs/nope.md", env=env, cwd=examples)
    assert missing.returncode == 1
    assert "node docs/nope.md not found in this project" in " ".join(missing.stderr.split())


def test_new_creates_lint_clean_specs(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    epic = kg("new", "epic", "Payments", env=env, cwd=tmp_path)
    assert (epic.returncode, epic.stdout.strip()) == (0, "created docs/epics/payments.md")
    story = kg(
        "new", "story", "Pay by card", "--epic", "docs/epics/payments.md", env=env, cwd=tmp_path
    )
    assert story.returncode == 0, story.stderr
    assert (
        "[Payments](../epics/payments.md)" in (tmp_path / "docs/stories/pay-by-card.md").read_text()
    )
    assert kg("new", "adr", "Use PostgreSQL", env=env, cwd=tmp_path).returncode == 0
    assert kg("new", "rule", "No secrets", env=env, cwd=tmp_path).returncode == 0
    assert kg("lint", env=env, cwd=tmp_path).returncode == 0
    again = kg("new", "epic", "Payments", env=env, cwd=tmp_path)
    assert again.returncode == 1 and "already exists" in again.stderr
    wrong = kg("new", "memo", "x", env=env, cwd=tmp_path)
    assert wrong.returncode == 2, "typer rejects an unknown kind"


def test_sync_and_hooks_install_in_a_repository(env: dict[str, str], tmp_path: Path) -> None:
    repo = Repo(tmp_path, env)
    repo.write("docs/a.md", "# A\n")
    repo.commit()
    first = kg("sync", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(
        "sync: full scan (first sync of this database and scope); 1 files"
    )
    assert kg("sync", env=env, cwd=tmp_path).stdout.startswith("sync: up to date at")
    hooks = kg("hooks", "install", "--background-above", "5", env=env, cwd=tmp_path)
    assert hooks.returncode == 0, hooks.stderr
    assert f"installed {tmp_path / '.git/hooks/pre-commit'}" in hooks.stdout
    assert "background above 5 changed files" in hooks.stdout


def test_ingest_skips_unsuitable_files_with_warnings_honours_ignores_and_shows_progress(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "project").mkdir()
    repo = Repo(tmp_path / "project")
    (repo.root / ".kg").mkdir()
    repo.write("docs/spec.md", "# Spec\n\nThe checkout keeps the cart.\n")
    repo.write("docs/chat.md", "# Chat log\n" + "blah " * 600)  # ~3 KB
    repo.write("docs/image.md", b"\x89PNG\r\n\x1a\n\x00\x00")
    repo.write("docs/latin1.md", b"# Caf\xe9\n")
    repo.write(".gitignore", "build/\n")
    repo.write("build/generated.md", "# Generated\n")
    repo.write(".kgignore", "notes/\n")
    repo.write("notes/todo.md", "# Todo\n")
    repo.commit()

    plain = {**env, "KG_PROGRESS_SECONDS": "0"}
    out = kg("ingest", ".", "--max-file-bytes", "2000", env=plain, cwd=repo.root)
    assert out.returncode == 0, "unsuitable files are warnings: " + out.stderr
    assert "4 files: 1 changed, 0 unchanged, 0 removed, 0 failed, 3 skipped" in out.stdout
    assert "docs/chat.md:1: warning: refused: file is 3011 bytes, the limit is 2000" in out.stderr
    assert "docs/image.md:3: warning: refused: binary file" in out.stderr
    assert "docs/latin1.md:1: warning: invalid UTF-8" in out.stderr
    assert "skipped 3 files (too large, binary or not UTF-8" in out.stderr
    assert "--max-file-bytes raises the size limit" in out.stderr
    progress = [line for line in out.stderr.splitlines() if line.startswith("ingest: ")]
    assert progress, out.stderr
    assert "files parsed 1/1" in progress[-1]
    assert "events appended" in progress[-1]
    # graph first, vectors after: the embedding has a progress line of its own
    embedding = [line for line in out.stderr.splitlines() if line.startswith("embed: ")]
    assert embedding and "texts embedded" in embedding[-1], out.stderr

    inspected = kg("inspect", "build/generated.md", env=env, cwd=repo.root)
    assert inspected.returncode != 0, "git-ignored files are not ingested"
    assert kg("inspect", "notes/todo.md", env=env, cwd=repo.root).returncode != 0
    assert kg("inspect", "docs/spec.md", env=env, cwd=repo.root).returncode == 0

    raised = kg("ingest", "docs", "--max-file-bytes", "10000", env=env, cwd=repo.root)
    assert raised.returncode == 0, raised.stderr
    assert "1 changed, 1 unchanged, 0 removed, 0 failed, 2 skipped" in raised.stdout


def test_a_full_sync_shows_its_progress_on_stderr(env: dict[str, str], examples: Path) -> None:
    plain = {**env, "KG_PROGRESS_SECONDS": "0"}
    out = kg("sync", "--full", env=plain, cwd=examples)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("sync: full scan (requested)"), "stdout keeps the summary only"
    lines = [line for line in out.stderr.splitlines() if line.startswith("sync: ")]
    total = int(lines[0].split("files read 0/", 1)[1].split(";")[0].split(",")[0])
    assert total >= 11, "the examples' specs, rules and source files"
    last = lines[-1]
    for part in (f"files read {total}/{total}", f"files parsed {total}/{total}",
                 "events appended", "texts embedded"):  # fmt: skip
        assert part in last, last
    assert "events projected" in last and "elapsed" in last


def test_sync_worktree_and_watch_make_uncommitted_saves_searchable(
    env: dict[str, str], tmp_path: Path
) -> None:
    repo = Repo(tmp_path, env)
    repo.write("docs/a.md", "# A\n\nCommitted text.\n")
    repo.commit()
    repo.write("docs/a.md", "# A\n\nAn uncommitted note on ocelots.\n")
    assert "ocelots" not in kg("query", "ocelots", env=env, cwd=tmp_path).stdout

    out = kg("sync", "--worktree", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "working tree: 1 file(s)" in out.stdout
    assert "section:docs/a.md#a" in kg("query", "ocelots", env=env, cwd=tmp_path).stdout
    both = kg("sync", "--worktree", "--full", env=env, cwd=tmp_path)
    assert both.returncode == 2 and "--worktree and --full" in both.stderr

    watcher = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "watch"],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert watcher.stdout is not None
        first = watcher.stdout.readline()  # "watching ...", then the first pass
        assert first.startswith("watching "), first
        assert "working tree" in watcher.stdout.readline()
        repo.write("docs/b.md", "# B\n\nSaved while watched: tapirs.\n")
        deadline = time.monotonic() + 60
        while "section:docs/b.md#b" not in kg("query", "tapirs", env=env, cwd=tmp_path).stdout:
            assert time.monotonic() < deadline, "the save never became searchable"
            time.sleep(0.2)
    finally:
        watcher.terminate()
        watcher.wait(30)
    assert watcher.returncode == 0, "SIGTERM stops the watcher cleanly"
