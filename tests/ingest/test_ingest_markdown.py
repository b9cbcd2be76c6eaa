"""Document structure: sections, nesting, front matter, code blocks, duplicate headings."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kg.ingest import DEFAULT_SCHEMA, ParsedDocument, ParsedNode, parse_markdown, parse_text

SPEC = """\
---
title: Checkout spec
owner: payments
reviewed: 2024-03-01
tags: [checkout, cart]
---
Preamble before any heading.

# Checkout

Intro of checkout.

```markdown
# Not a heading (fenced)
```

    # Not a heading either (indented)

## Cart

Cart text.

### Totals

Totals text.

## Cart

Second cart.

## Cart

Third cart.

Payment
-------

Setext heading body.

# Appendix
"""


def by_id(doc: ParsedDocument) -> dict[str, ParsedNode]:
    return {n.node_id: n for n in doc.nodes}


def edge_set(doc: ParsedDocument, edge_type: str) -> set[tuple[str, str]]:
    return {(e.from_node, e.to_node) for e in doc.edges if e.edge_type == edge_type}


def parse_spec(tmp_path: Path) -> ParsedDocument:
    path = tmp_path / "docs" / "checkout.md"
    path.parent.mkdir(parents=True)
    path.write_text(SPEC, encoding="utf-8")
    return parse_markdown(tmp_path, path)


def test_document_and_sections_have_stable_ids_and_lines(tmp_path: Path) -> None:
    doc = parse_spec(tmp_path)
    nodes = by_id(doc)
    sid = "section:docs/checkout.md#"
    assert doc.path == "docs/checkout.md"
    assert doc.problems == ()
    assert [n.node_id for n in doc.nodes] == [
        "document:docs/checkout.md",
        sid + "checkout",
        sid + "cart",
        sid + "totals",
        sid + "cart-1",
        sid + "cart-2",
        sid + "payment",
        sid + "appendix",
    ]
    assert nodes[sid + "checkout"].line == 9
    assert nodes[sid + "totals"].line == 23
    assert nodes[sid + "payment"].line == 35  # setext heading: its text line
    assert nodes[sid + "totals"].properties == {
        "level": 3,
        "anchor": "totals",
        "path": ["Checkout", "Cart"],
    }
    assert "path" not in nodes[sid + "checkout"].properties  # a top heading has no ancestors
    assert nodes[sid + "payment"].properties["level"] == 2
    assert all(n.node_type == "Section" and n.labels == ("Section",) for n in doc.nodes[1:])


def test_headings_in_code_blocks_are_not_sections(tmp_path: Path) -> None:
    doc = parse_spec(tmp_path)
    names = [n.name for n in doc.nodes]
    assert not any("Not a heading" in name for name in names)
    checkout = by_id(doc)["section:docs/checkout.md#checkout"]
    # ... but they are part of the enclosing section's own text.
    assert "# Not a heading (fenced)" in checkout.content
    assert "# Not a heading either (indented)" in checkout.content


def test_section_content_is_own_text_only(tmp_path: Path) -> None:
    nodes = by_id(parse_spec(tmp_path))
    sid = "section:docs/checkout.md#"
    assert nodes[sid + "cart"].content == "Cart text."
    assert nodes[sid + "totals"].content == "Totals text."
    assert nodes[sid + "cart-2"].content == "Third cart."
    assert nodes[sid + "payment"].content == "Setext heading body."
    assert nodes[sid + "appendix"].content == ""
    assert nodes[sid + "checkout"].content.startswith("Intro of checkout.")
    assert "Cart text." not in nodes[sid + "checkout"].content


def test_contains_and_parent_of_edges(tmp_path: Path) -> None:
    doc = parse_spec(tmp_path)
    d, s = "document:docs/checkout.md", "section:docs/checkout.md#"
    assert edge_set(doc, "CONTAINS") == {
        (d, s + name)
        for name in ("checkout", "cart", "totals", "cart-1", "cart-2", "payment", "appendix")
    }
    assert edge_set(doc, "PARENT_OF") == {
        (s + "checkout", s + "cart"),
        (s + "cart", s + "totals"),
        (s + "checkout", s + "cart-1"),
        (s + "checkout", s + "cart-2"),
        (s + "checkout", s + "payment"),
    }


def test_parent_skips_levels_to_nearest_shallower_heading(tmp_path: Path) -> None:
    doc = parse_text("a.md", "# A\n#### Deep\n### Mid\n## B\n###### Leaf\n", DEFAULT_SCHEMA)
    s = "section:a.md#"
    assert edge_set(doc, "PARENT_OF") == {
        (s + "a", s + "deep"),
        (s + "a", s + "mid"),
        (s + "a", s + "b"),
        (s + "b", s + "leaf"),
    }


def test_front_matter_becomes_json_safe_document_properties(tmp_path: Path) -> None:
    doc = parse_spec(tmp_path)
    document = doc.nodes[0]
    assert document.node_id == "document:docs/checkout.md"
    assert document.node_type == "Document"
    assert document.labels == ("Document",)
    assert document.properties == {
        "title": "Checkout spec",
        "owner": "payments",
        "reviewed": "2024-03-01",  # a YAML date, stored as ISO text
        "tags": ["checkout", "cart"],
    }
    assert document.name == "Checkout spec"
    assert document.content == "Preamble before any heading."
    assert document.line == 1


def test_document_name_falls_back_to_first_h1_then_stem() -> None:
    assert parse_text("x/notes.md", "intro\n## Two\n# One\n", DEFAULT_SCHEMA).nodes[0].name == "One"
    assert parse_text("x/notes.md", "no headings\n", DEFAULT_SCHEMA).nodes[0].name == "notes"


def test_content_hash_is_sha256_of_text(tmp_path: Path) -> None:
    doc = parse_spec(tmp_path)
    assert doc.content_hash == hashlib.sha256(SPEC.encode()).hexdigest()


def test_malformed_front_matter_is_reported_with_line_and_document_still_parsed() -> None:
    text = "---\ntitle: ok\nowner: [unclosed\n---\n# Heading\n\nbody\n"
    doc = parse_text("docs/bad.md", text, DEFAULT_SCHEMA)
    assert len(doc.problems) == 1
    problem = doc.problems[0]
    assert problem.path == "docs/bad.md"
    assert problem.line in (3, 4)  # the flow sequence opened on line 3 is never closed
    assert str(problem).startswith(f"docs/bad.md:{problem.line}: malformed front matter")
    assert doc.nodes[0].properties == {}
    assert [n.node_id for n in doc.nodes] == ["document:docs/bad.md", "section:docs/bad.md#heading"]
    assert doc.nodes[1].content == "body"


def test_front_matter_that_is_not_a_mapping_is_a_problem() -> None:
    doc = parse_text("a.md", "---\n- just\n- a list\n---\n# H\n", DEFAULT_SCHEMA)
    assert [str(p) for p in doc.problems] == [
        "a.md:2: front matter must be a mapping of keys to values, not a list"
    ]
    assert len(doc.nodes) == 2


def test_unclosed_front_matter_is_reported_and_parsed_as_markdown() -> None:
    doc = parse_text("a.md", "---\ntitle: x\n# Real heading\n", DEFAULT_SCHEMA)
    assert [p.line for p in doc.problems] == [1]
    assert "never closed" in doc.problems[0].message
    assert "section:a.md#real-heading" in {n.node_id for n in doc.nodes}


def test_yaml_alias_bomb_is_refused_not_expanded() -> None:
    bomb = "---\na: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for name, prev in zip("bcdefg", "abcdef", strict=True):
        bomb += f"{name}: &{name} [{', '.join(['*' + prev] * 10)}]\n"
    doc = parse_text("bomb.md", bomb + "---\n# H\n", DEFAULT_SCHEMA)
    assert any("more than" in p.message for p in doc.problems)
    assert doc.nodes[0].properties == {}


def test_headings_with_markup_slug_like_github() -> None:
    text = (
        "# The `parse()` API: v2.0!\n"
        "# *Émphasis* and [a link](b.md)\n"
        "# snake_case and-dash\n"
        "# Hello  World\n"
    )
    ids = [n.node_id for n in parse_text("a.md", text, DEFAULT_SCHEMA).nodes[1:]]
    assert ids == [
        "section:a.md#the-parse-api-v20",
        "section:a.md#émphasis-and-a-link",
        "section:a.md#snake_case-and-dash",
        "section:a.md#hello--world",
    ]


def test_duplicate_slug_rule_matches_github_even_with_suffix_like_headings() -> None:
    text = "# A\n# A\n# A 1\n# A\n"
    ids = [n.node_id.split("#", 1)[1] for n in parse_text("a.md", text, DEFAULT_SCHEMA).nodes[1:]]
    assert ids == ["a", "a-1", "a-1-1", "a-2"]


def test_crlf_and_bom_do_not_change_structure() -> None:
    unix = parse_text("a.md", "# One\nbody\n## Two\n", DEFAULT_SCHEMA)
    windows = parse_text("a.md", "\ufeff# One\r\nbody\r\n## Two\r\n", DEFAULT_SCHEMA)
    assert windows.nodes == unix.nodes
    assert windows.edges == unix.edges


def test_ids_and_names_stay_within_event_limits() -> None:
    paragraph = "word " * 400  # a paragraph accidentally underlined: a 2000-character heading
    doc = parse_text("a.md", f"{paragraph}\n---\n[x](#{'word-' * 100})\n", DEFAULT_SCHEMA)
    section = doc.nodes[1]
    assert len(section.name) == 1000
    assert section.node_id == "section:a.md#" + ("word-" * 40)
    refs = [e.to_node for e in doc.edges if e.edge_type == "REFERENCES"]
    assert refs == [section.node_id]  # link anchors are cut the same way


def test_unusable_paths_are_refused() -> None:
    long_path = "d/" * 400 + "a.md"
    assert (
        "node ids allow 700" in parse_text(long_path, "# A\n", DEFAULT_SCHEMA).problems[0].message
    )
    doc = parse_text("a.md", "# A\n[tab](<b%09c.md>) [ok](b.md)\n", DEFAULT_SCHEMA)
    assert [e.to_node for e in doc.edges if e.edge_type == "REFERENCES"] == ["document:b.md"]
    assert [str(p) for p in doc.problems] == [
        "a.md:2: link target 'b%09c.md' ignored: path contains control characters, "
        "which node ids do not allow"
    ]
