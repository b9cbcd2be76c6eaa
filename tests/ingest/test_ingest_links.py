"""Links: canonical ids across spellings and working directories, anchors, wiki links."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kg.ingest import DEFAULT_SCHEMA, ParsedDocument, WikiIndex, parse_markdown, parse_text

Writer = Callable[[str, str | bytes], Path]


def refs(doc: ParsedDocument) -> list[tuple[str, str, int, str]]:
    return [
        (e.from_node, e.to_node, e.properties["line"], e.properties["raw"])
        for e in doc.edges
        if e.edge_type == "REFERENCES" and not e.to_node.startswith("requirement:")
    ]


def targets(doc: ParsedDocument) -> set[str]:
    return {to for _, to, _, _ in refs(doc)}


@pytest.mark.parametrize(
    "spelling", ["./a.md", "a.md", "../docs/a.md", "/docs/a.md", "sub/../a.md"]
)
def test_link_spellings_resolve_to_one_canonical_id(spelling: str) -> None:
    doc = parse_text("docs/b.md", f"# B\nsee [a]({spelling})\n", DEFAULT_SCHEMA)
    assert refs(doc) == [("section:docs/b.md#b", "document:docs/a.md", 2, spelling)]


def test_ids_do_not_depend_on_the_working_directory(
    tmp_path: Path, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("docs/a.md", "# A\n")
    b = write("docs/b.md", "# B\n[1](./a.md) [2](a.md) [3](../docs/a.md#a)\n")
    results = []
    for cwd in (tmp_path, tmp_path / "docs", Path("/")):
        monkeypatch.chdir(cwd)
        for path in (b, Path("docs/b.md")):  # absolute, and relative to the root
            doc = parse_markdown(tmp_path, path)
            results.append((doc.path, targets(doc)))
    assert {r[0] for r in results} == {"docs/b.md"}
    assert {frozenset(r[1]) for r in results} == {
        frozenset({"document:docs/a.md", "section:docs/a.md#a"})
    }


def test_relative_root_is_taken_from_the_working_directory(
    tmp_path: Path, write: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write("docs/b.md", "# B\n[a](a.md)\n")
    monkeypatch.chdir(tmp_path.parent)
    doc = parse_markdown(Path(tmp_path.name), Path("docs/b.md"))
    assert doc.path == "docs/b.md"
    assert targets(doc) == {"document:docs/a.md"}


def test_anchors_same_file_and_other_file() -> None:
    text = "# Top\n[here](#Details) [there](other.md#Setup%20Steps) [empty](#)\n## Details\n"
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA)
    assert refs(doc) == [
        ("section:docs/x.md#top", "section:docs/x.md#details", 2, "#Details"),
        ("section:docs/x.md#top", "section:docs/other.md#setup steps", 2, "other.md#Setup%20Steps"),
    ]


def test_link_before_any_heading_comes_from_the_document() -> None:
    doc = parse_text("x.md", "Intro [a](a.md)\n\n# H\n[b](b.md)\n", DEFAULT_SCHEMA)
    assert refs(doc) == [
        ("document:x.md", "document:a.md", 1, "a.md"),
        ("section:x.md#h", "document:b.md", 4, "b.md"),
    ]


def test_reference_links_resolve_and_report_the_usage_line() -> None:
    text = "# H\n\nfirst line\nsee [the spec][spec] here\n\n[spec]: ../specs/s.md#Intro\n"
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA)
    assert refs(doc) == [
        ("section:docs/x.md#h", "section:specs/s.md#intro", 4, "../specs/s.md#Intro")
    ]


def test_links_in_tables_lists_and_headings_are_found() -> None:
    text = "# See [h](h.md)\n\n- item [l](l.md)\n\n| a | b |\n|---|---|\n| [t](t.md) | x |\n"
    doc = parse_text("x.md", text, DEFAULT_SCHEMA)
    assert [(to, line) for _, to, line, _ in refs(doc)] == [
        ("document:h.md", 1),
        ("document:l.md", 3),
        ("document:t.md", 7),
    ]


def test_external_and_non_markdown_links_are_ignored() -> None:
    text = (
        "# H\n[w](https://example.com/a.md) [m](mailto:x@y.z) [p](//cdn.example.com/a.md)\n"
        "[img](./diagram.png) ![alt](./a.md) [dir](../docs/) [code](`x`)\n"
        "<https://example.com> [no ext](./notes)\n"
    )
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA)
    assert refs(doc) == []
    assert doc.problems == ()


def test_link_escaping_the_root_is_a_problem_and_no_edge() -> None:
    text = "# H\nok [a](a.md)\n[evil](../../../etc/passwd.md) [[../../outside]]\n"
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA)
    assert targets(doc) == {"document:docs/a.md"}
    assert [str(p) for p in doc.problems] == [
        "docs/x.md:3: link target '../../../etc/passwd.md' is outside the project root; ignored",
        "docs/x.md:3: wiki link [[../../outside]] is outside the project root; ignored",
    ]


def test_repeated_link_in_one_section_is_one_edge_with_first_line() -> None:
    doc = parse_text("x.md", "# H\n[a](a.md)\n\n[again](./a.md)\n", DEFAULT_SCHEMA)
    assert refs(doc) == [("section:x.md#h", "document:a.md", 2, "a.md")]


def test_wiki_links_without_index_resolve_next_to_the_file() -> None:
    text = "# H\n[[Page]] [[page#Some Heading]] [[other|Label]] [[#Local Part]] [[sub/deep]]\n"
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA)
    assert refs(doc) == [
        ("section:docs/x.md#h", "document:docs/Page.md", 2, "[[Page]]"),
        ("section:docs/x.md#h", "section:docs/page.md#some-heading", 2, "[[page#Some Heading]]"),
        ("section:docs/x.md#h", "document:docs/other.md", 2, "[[other|Label]]"),
        ("section:docs/x.md#h", "section:docs/x.md#local-part", 2, "[[#Local Part]]"),
        ("section:docs/x.md#h", "document:docs/sub/deep.md", 2, "[[sub/deep]]"),
    ]


def test_wiki_links_resolve_by_stem_anywhere_in_the_project() -> None:
    index = WikiIndex(["docs/x.md", "specs/deep/Glossary.md", "notes/api.md", "adr/0001-db.md"])
    text = "# H\n[[glossary]] [[Glossary#Term One|the term]] [[notes/api]] [[0001-db.md]]\n"
    doc = parse_text("docs/x.md", text, DEFAULT_SCHEMA, index)
    assert targets(doc) == {
        "document:specs/deep/Glossary.md",
        "section:specs/deep/Glossary.md#term-one",
        "document:notes/api.md",  # a path: root-relative, since docs/notes/api.md does not exist
        "document:adr/0001-db.md",
    }
    assert doc.problems == ()


def test_ambiguous_wiki_link_prefers_same_folder_and_reports_alternatives() -> None:
    index = WikiIndex(["docs/x.md", "docs/intro.md", "a/intro.md", "intro.md"])
    doc = parse_text("docs/x.md", "# H\n[[intro]]\n", DEFAULT_SCHEMA, index)
    assert targets(doc) == {"document:docs/intro.md"}
    assert [str(p) for p in doc.problems] == [
        "docs/x.md:2: wiki link [[intro]] matches several files; using docs/intro.md "
        "(not a/intro.md, intro.md)"
    ]


def test_wiki_link_label_is_the_heading_text_of_a_wiki_heading() -> None:
    doc = parse_text("x.md", "# About [[glossary|the Glossary]]\n", DEFAULT_SCHEMA)
    assert doc.nodes[1].node_id == "section:x.md#about-the-glossary"


def test_escaped_and_code_wiki_links_are_not_links() -> None:
    doc = parse_text("x.md", "# H\n\\[[not]] `[[code]]`\n\n    [[indented]]\n", DEFAULT_SCHEMA)
    assert refs(doc) == []


@pytest.mark.parametrize(
    "paths",
    [
        ["a/Intro.md", "b/intro.md", "c/x.md", "intro.md"],  # sorted, as discover_markdown gives
        ["intro.md", "c/x.md", "b/intro.md", "a/Intro.md"],  # any order
    ],
)
def test_wiki_index_lists_each_stems_files_sorted_whatever_the_input_order(
    paths: list[str],
) -> None:
    index = WikiIndex(paths)
    assert index.by_stem("INTRO") == ["a/Intro.md", "b/intro.md", "intro.md"]
    assert index.by_stem("x") == ["c/x.md"] and "c/x.md" in index
