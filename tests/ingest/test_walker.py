"""Which files a project scan sees: git's ignore rules, the project's .kgignore, hidden folders.

Real git repositories (``git check-ignore`` decides inside a work tree), and a plain folder
(where the root .gitignore is read with pathspec)."""

from __future__ import annotations

from pathlib import Path

from kg.ingest.walker import drop_ignored, walk_files
from tests.ingest.gitrepo import Repo


def test_a_git_project_scan_leaves_out_what_git_ignores(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write(".gitignore", "chat-logs/\n*.draft.md\n")
    repo.write("docs/.gitignore", "generated/\n")
    repo.write(".git/info/exclude", "scratch.md\n")
    for rel in (
        "README.md",
        "docs/spec.md",
        "docs/idea.draft.md",
        "docs/generated/api.md",
        "chat-logs/2026-11-23.md",
        "scratch.md",
        ".kg/pgdata/notes.md",
        "node_modules/pkg/README.md",
    ):
        repo.write(rel, "# x\n")
    assert walk_files(tmp_path) == ["README.md", "docs/spec.md"]
    assert walk_files(tmp_path, "docs") == ["docs/spec.md"]


def test_a_tracked_file_is_never_ignored_as_in_git(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/kept.draft.md", "# kept\n")
    repo.commit("track it")
    repo.write(".gitignore", "*.draft.md\n")
    repo.write("docs/new.draft.md", "# new\n")
    assert walk_files(tmp_path) == ["docs/kept.draft.md"]


def test_kgignore_leaves_out_files_git_keeps(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write(".kgignore", "# chat logs stay in git, not in the graph\nlogs/\n!logs/keep.md\n")
    repo.write("logs/a.md", "# a\n")
    repo.write("logs/keep.md", "# keep\n")
    repo.write("docs/b.md", "# b\n")
    repo.commit()
    assert walk_files(tmp_path) == ["docs/b.md", "logs/keep.md"]
    assert drop_ignored(tmp_path, ["logs/a.md", "docs/b.md"]) == ["docs/b.md"]


def test_outside_git_the_root_gitignore_and_kgignore_apply(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / ".kgignore").write_text("*.log.md\n")
    for rel in ("a.md", "build/out.md", "notes/today.log.md", "notes/b.markdown"):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("# x\n")
    assert walk_files(tmp_path) == ["a.md", "notes/b.markdown"]


def test_an_edited_kgignore_is_read_again(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# a\n")
    (tmp_path / "b.md").write_text("# b\n")
    assert walk_files(tmp_path) == ["a.md", "b.md"]
    ignore = tmp_path / ".kgignore"
    ignore.write_text("b.md\n")
    assert walk_files(tmp_path) == ["a.md"]
    ignore.write_text("a.md\n")
    import os

    os.utime(ignore, (1, 1))  # a new mtime even on a coarse-grained file system
    assert walk_files(tmp_path) == ["b.md"]


def test_a_nested_repository_is_walked_and_a_folder_of_ignored_files_left_out(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path)
    repo.write(".gitignore", "*.draft.md\n")
    repo.write("drafts/a.draft.md", "# a\n")
    repo.write("drafts/b.draft.md", "# b\n")
    (tmp_path / "vendor/lib").mkdir(parents=True)
    Repo(tmp_path / "vendor/lib")  # a repository of its own inside the project
    repo.write("vendor/lib/README.md", "# lib\n")
    repo.write("vendor/lib/x.draft.md", "# x\n")
    # The outer repository's rules stop at the nested one, as they do for git itself.
    assert walk_files(tmp_path) == ["vendor/lib/README.md", "vendor/lib/x.draft.md"]
