"""Cross-file lint: dangling file links, dangling anchors, duplicate ids and definitions."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kg.ingest import (
    DEFAULT_SCHEMA,
    ParsedDocument,
    ParseProblem,
    find_dangling,
    parse_project,
    parse_text,
)
from kg.ingest.service import lint_files

Writer = Callable[[str, str | bytes], Path]


def test_lint_reports_dangling_links_and_anchors_as_file_line_message(
    tmp_path: Path, write: Writer
) -> None:
    write("docs/a.md", "# A\n## Setup\n")
    write(
        "docs/b.md",
        "# B\n"
        "ok [a](a.md) [setup](./a.md#setup) [[a#Setup]] [self](#b)\n"
        "missing [x](missing.md)\n"
        "bad anchor [y](../docs/a.md#nope)\n"
        "wiki [[ghost]] and [[a#Ghost Section]]\n"
        "local [z](#nowhere)\n",
    )
    problems = find_dangling(parse_project(tmp_path))
    assert [str(p) for p in problems] == [
        "docs/b.md:3: dangling link (missing.md): no file docs/missing.md",
        "docs/b.md:4: dangling anchor (../docs/a.md#nope): no heading #nope in docs/a.md",
        "docs/b.md:5: dangling anchor ([[a#Ghost Section]]): "
        "no heading #ghost-section in docs/a.md",
        "docs/b.md:5: dangling link ([[ghost]]): no file docs/ghost.md",
        "docs/b.md:6: dangling anchor (#nowhere): no heading #nowhere in docs/b.md",
    ]


def test_anchor_into_a_missing_file_is_a_dangling_link() -> None:
    doc = parse_text("a.md", "# A\n[x](gone.md#part)\n", DEFAULT_SCHEMA)
    assert [str(p) for p in find_dangling([doc])] == [
        "a.md:2: dangling link (gone.md#part): no file gone.md"
    ]


def test_duplicate_suffix_anchor_resolves() -> None:
    doc = parse_text("a.md", "# A\n## Notes\n## Notes\n[second](#notes-1)\n", DEFAULT_SCHEMA)
    assert find_dangling([doc]) == []


def test_lint_reports_duplicate_node_ids() -> None:
    first = parse_text("a.md", "# A\n", DEFAULT_SCHEMA)
    again = parse_text("a.md", "intro\n\n# A\n", DEFAULT_SCHEMA)
    assert [str(p) for p in find_dangling([first, again])] == [
        "a.md:1: duplicate node id document:a.md (first at a.md:1)",
        "a.md:3: duplicate node id section:a.md#a (first at a.md:1)",
    ]


def test_shared_requirements_are_not_duplicates_but_double_definitions_are() -> None:
    """Two documents defining FR-1 define two requirements (each scoped to its document,
    as fourteen SpecKit runs each have their FR-001); one document defining it twice is
    a mistake, reported where it happens."""
    a = parse_text("a.md", "# FR-1 Login\nsee NFR-2\n", DEFAULT_SCHEMA)
    b = parse_text("b.md", "# Notes\nFR-1 and NFR-2\n\n# FR1: login again\n", DEFAULT_SCHEMA)
    assert [str(p) for p in find_dangling([a, b])] == []
    twice = parse_text("c.md", "# FR-1 Login\n\n# FR1: login again\n", DEFAULT_SCHEMA)
    assert [str(p) for p in twice.problems] == [
        "c.md:3: requirement FR-1 is defined twice in this file (lines 1 and 3); only one "
        "definition is kept: give the other its own id"
    ]


def test_clean_project_has_no_problems(tmp_path: Path, write: Writer) -> None:
    write("README.md", "# Readme\n[prd](docs/prd.md#goals)\n")
    write("docs/prd.md", "# PRD\n## Goals\n[home](../README.md) [[README#Readme]]\n")
    assert find_dangling(parse_project(tmp_path)) == []


def test_link_to_an_unreadable_file_says_so() -> None:
    broken = ParsedDocument("b.md", "", (), (), (ParseProblem("b.md", 1, "invalid UTF-8"),))
    doc = parse_text("a.md", "# A\n[b](b.md) [c](b.md#c)\n", DEFAULT_SCHEMA)
    assert [str(p) for p in find_dangling([doc, broken])] == [
        "a.md:2: link (b.md#c) to b.md, which could not be parsed",
        "a.md:2: link (b.md) to b.md, which could not be parsed",
    ]


def test_a_link_to_a_source_file_is_checked_against_the_project_files(
    tmp_path: Path, write: Writer
) -> None:
    write("src/shop/checkout.py", "def pay() -> None:\n    pass\n")
    write(
        "docs/a.md",
        "# A\n[pay](../src/shop/checkout.py#L1) and [gone](../src/shop/refund.py)\n",
    )
    assert [str(p) for p in lint_files(tmp_path)] == [
        "docs/a.md:2: dangling link (../src/shop/refund.py): no file src/shop/refund.py"
    ]
