"""Bad input never raises: it becomes a ParseProblem naming the file and the reason."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from kg.ingest import parse_markdown, project_relpath, read_markdown_file

Writer = Callable[[str, str | bytes], Path]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.md").write_text("# Secret\n", encoding="utf-8")
    return project


def test_reads_utf8_and_drops_bom(root: Path) -> None:
    (root / "a.md").write_bytes(b"\xef\xbb\xbf# Caf\xc3\xa9\n")
    assert read_markdown_file(root, Path("a.md")) == ("# Café\n", None)


@pytest.mark.parametrize("given", ["../secret.md", "docs/../../secret.md"])
def test_relative_path_outside_root_is_refused(root: Path, given: str) -> None:
    text, problem = read_markdown_file(root, Path(given))
    assert text is None and problem is not None
    assert "outside the project root" in problem.message
    assert str(problem).startswith(f"{given}:1: refused")


def test_absolute_path_outside_root_is_refused(root: Path) -> None:
    outside = root.parent / "secret.md"
    text, problem = read_markdown_file(root, outside)
    assert text is None and problem is not None and "outside the project root" in problem.message
    doc = parse_markdown(root, outside)
    assert doc.nodes == () and doc.edges == ()
    assert "outside the project root" in doc.problems[0].message


def test_symlink_escaping_root_is_refused_without_reading(root: Path) -> None:
    os.symlink(root.parent / "secret.md", root / "link.md")
    text, problem = read_markdown_file(root, Path("link.md"))
    assert text is None and problem is not None
    assert problem.path == "link.md"
    assert "outside the project root" in problem.message
    assert parse_markdown(root, Path("link.md")).nodes == ()


def test_symlink_inside_root_is_read_under_its_own_name(root: Path) -> None:
    (root / "real.md").write_text("# Real\n", encoding="utf-8")
    os.symlink(root / "real.md", root / "alias.md")
    doc = parse_markdown(root, Path("alias.md"))
    assert doc.problems == ()
    assert doc.nodes[0].node_id == "document:alias.md"


def test_file_larger_than_limit_is_refused(root: Path) -> None:
    (root / "big.md").write_text("# Big\n" + "x" * 200, encoding="utf-8")
    text, problem = read_markdown_file(root, Path("big.md"), max_bytes=100)
    assert text is None and problem is not None
    assert str(problem) == "big.md:1: refused: file is 206 bytes, the limit is 100"
    ok, no_problem = read_markdown_file(root, Path("big.md"), max_bytes=206)
    assert ok is not None and no_problem is None


def test_binary_file_is_refused(root: Path) -> None:
    (root / "image.md").write_bytes(b"# Title\n\x89PNG\x00\x01\x02")
    text, problem = read_markdown_file(root, Path("image.md"))
    assert text is None and problem is not None
    assert str(problem) == "image.md:2: refused: binary file (NUL byte at offset 12)"


def test_invalid_utf8_reports_offset_and_line(root: Path) -> None:
    (root / "latin1.md").write_bytes(b"# Title\n\nCaf\xe9 au lait\n")
    text, problem = read_markdown_file(root, Path("latin1.md"))
    assert text is None and problem is not None
    assert problem.line == 3
    assert "invalid UTF-8 at byte offset 12" in problem.message
    doc = parse_markdown(root, Path("latin1.md"))
    assert doc.path == "latin1.md" and doc.nodes == () and doc.content_hash == ""
    assert doc.problems == (problem,)


def test_missing_file_and_directory_are_problems(root: Path) -> None:
    (root / "folder.md").mkdir()
    missing = read_markdown_file(root, Path("nope.md"))[1]
    folder = read_markdown_file(root, Path("folder.md"))[1]
    assert missing is not None and "cannot read file" in missing.message
    assert folder is not None and folder.message == "refused: not a regular file"


def test_fifo_is_refused_without_blocking(root: Path) -> None:
    os.mkfifo(root / "pipe.md")
    problem = read_markdown_file(root, Path("pipe.md"))[1]
    assert problem is not None and problem.message == "refused: not a regular file"


def test_project_relpath(root: Path) -> None:
    assert project_relpath(root, Path("docs/./x/../a.md")) == "docs/a.md"
    assert project_relpath(root, root / "docs" / "a.md") == "docs/a.md"
    assert project_relpath(root, Path("..")) is None
    assert project_relpath(root, Path(".")) is None
