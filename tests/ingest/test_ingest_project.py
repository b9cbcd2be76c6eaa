"""Whole-project parsing: discovery and the shared wiki index."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kg.ingest import discover_markdown, parse_project

Writer = Callable[[str, str | bytes], Path]


def test_discovery_reads_hidden_folders_but_skips_tool_state_and_dependencies(
    tmp_path: Path, write: Writer
) -> None:
    for rel in (
        "README.md",
        "docs/a.markdown",
        "docs/b.MD",
        "docs/c.txt",
        ".specify/memory/constitution.md",
        ".git/x.md",
        ".kg/x.md",
        ".venv/y.md",
        "env/pyvenv.cfg",
        "env/lib/w.md",
        "node_modules/pkg/z.md",
    ):
        write(rel, "# x\n")
    assert discover_markdown(tmp_path) == [
        ".specify/memory/constitution.md",
        "README.md",
        "docs/a.markdown",
        "docs/b.MD",
    ]


def test_partial_parse_resolves_wiki_links_against_the_whole_project(
    tmp_path: Path, write: Writer
) -> None:
    write("specs/deep/glossary.md", "# Glossary\n")
    write("docs/x.md", "# X\n[[glossary]]\n")
    docs = parse_project(tmp_path, [Path("docs/x.md")])
    assert [d.path for d in docs] == ["docs/x.md"]
    refs = {e.to_node for e in docs[0].edges if e.edge_type == "REFERENCES"}
    assert refs == {"document:specs/deep/glossary.md"}


def test_unreadable_and_outside_files_are_reported_not_raised(
    tmp_path: Path, write: Writer
) -> None:
    write("ok.md", "# ok\n")
    write("bad.md", b"\xff\xfe")
    docs = parse_project(tmp_path, [Path("ok.md"), Path("bad.md"), Path("../x.md")])
    assert [(d.path, len(d.nodes), len(d.problems)) for d in docs] == [
        ("ok.md", 2, 0),
        ("bad.md", 0, 1),
        ("../x.md", 0, 1),
    ]


def test_parallel_parse_gives_the_same_documents_in_order(tmp_path: Path, write: Writer) -> None:
    for i in range(12):
        write(f"docs/s{i}.md", f"# S{i}\nFR-{i} [next](s{i + 1}.md) [[s{i - 1}#S{i - 1}]]\n")
    sequential = parse_project(tmp_path)
    parallel = parse_project(tmp_path, workers=2)
    assert [d.path for d in parallel] == [f"docs/s{i}.md" for i in sorted(range(12), key=str)]
    assert parallel == sequential
