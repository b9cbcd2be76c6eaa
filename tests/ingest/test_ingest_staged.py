"""Linting what a commit is about to record (the git index), without a database."""

from __future__ import annotations

from pathlib import Path

from kg.ingest.staged import lint_staged
from tests.ingest.gitrepo import Repo


def problems(root: Path) -> list[str]:
    return [str(p) for p in lint_staged(root)]


def test_a_dangling_link_in_a_staged_file_is_reported_from_the_staged_text(
    tmp_path: Path,
) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n\n## Goals\n")
    repo.commit()
    repo.write("docs/b.md", "# B\n\n[goals](a.md#goals) [aims](a.md#aims) [x](missing.md)\n")
    repo.git("add", "docs/b.md")
    repo.write("docs/b.md", "# B\n\nfixed on disk, not staged\n")
    assert problems(tmp_path) == [
        "docs/b.md:3: dangling anchor (a.md#aims): no heading #aims in docs/a.md",
        "docs/b.md:3: dangling link (missing.md): no file docs/missing.md",
    ]


def test_deleting_or_renaming_a_target_breaks_links_in_files_not_staged(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.write("docs/a.md", "# A\n\n## Goals\n")
    repo.write("docs/b.md", "# B\n\nSee [goals](a.md#goals).\n")
    repo.write("docs/c.md", "# C\n\n[[a]] and [old problem](nowhere.md)\n")
    repo.commit()

    repo.write("docs/a.md", "# A\n\n## Objectives\n")
    repo.git("add", "docs/a.md")
    assert problems(tmp_path) == [
        "docs/b.md:3: dangling anchor (a.md#goals): no heading #goals in docs/a.md"
    ], "c.md's old broken link is not this commit's problem"

    repo.git("reset", "-q")
    repo.git("rm", "-q", "-f", "docs/a.md")
    assert problems(tmp_path) == [
        "docs/b.md:3: dangling link (a.md#goals): no file docs/a.md",
        "docs/c.md:3: dangling link ([[a]]): no file docs/a.md",
    ]


def test_nothing_staged_or_only_clean_files_gives_no_problems(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    assert problems(tmp_path) == []
    repo.write("README.md", "# Readme\n\n[spec](docs/spec.md#scope)\n")
    repo.write("docs/spec.md", "---\ntitle: Spec\n---\n# Spec\n\n## Scope\n")
    repo.write("notes.txt", "[x](nowhere.md)")
    repo.git("add", "-A")
    assert problems(tmp_path) == [], "before the first commit everything staged is checked"
    repo.write("docs/bad.md", "---\ntitle: [unclosed\n---\n# Bad\n")
    repo.git("add", "-A")
    assert problems(tmp_path)[0].startswith("docs/bad.md:3: malformed front matter")
