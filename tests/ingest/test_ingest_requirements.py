"""Requirement ids: canonical nodes, REFERENCES from mentioning sections, DEFINES by headings."""

from __future__ import annotations

from kg.ingest import DEFAULT_SCHEMA, ParsedDocument, parse_text
from kg.ingest.requirements import RequirementMatcher

TEXT = """\
Preamble needs FR7.

# Requirements

## FR-13: Login
Users log in. Depends on FR12, nfr-2 and `NFR2`; restated: FR-13.

## NFR-02 Performance
p95 under 200 ms (see FR-013 and FR-13.2).

## Not requirements
xFR13 FR-13abc FR- FRX NFR FR13-old prefix-FR9 FR1x
"""


def typed_edges(doc: ParsedDocument, edge_type: str) -> list[tuple[str, str, int, str]]:
    return [
        (e.from_node, e.to_node, e.properties["line"], e.properties["raw"])
        for e in doc.edges
        if e.edge_type == edge_type and e.to_node.startswith("requirement:")
    ]


def test_requirement_nodes_are_canonical_and_unique() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    reqs = [n for n in doc.nodes if n.node_type == "Requirement"]
    assert [n.node_id for n in reqs] == [
        "requirement:FR-7",
        "requirement:FR-13",
        "requirement:FR-12",
        "requirement:NFR-2",
        "requirement:FR-13.2",
    ]
    assert all(n.labels == ("Requirement",) and n.name == n.node_id[12:] for n in reqs)
    assert reqs[1].line == 5  # first mention: the defining heading


def test_headings_starting_with_an_id_define_it() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    s = "section:docs/prd.md#"
    assert typed_edges(doc, "DEFINES") == [
        (s + "fr-13-login", "requirement:FR-13", 5, "FR-13"),
        (s + "nfr-02-performance", "requirement:NFR-2", 8, "NFR-02"),
    ]


def test_mentions_become_references_from_the_mentioning_section() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    s = "section:docs/prd.md#"
    assert typed_edges(doc, "REFERENCES") == [
        ("document:docs/prd.md", "requirement:FR-7", 1, "FR7"),
        (s + "fr-13-login", "requirement:FR-12", 6, "FR12"),
        (s + "fr-13-login", "requirement:NFR-2", 6, "nfr-2"),
        # FR-13 mentioned in its own defining section is not also a reference
        (s + "nfr-02-performance", "requirement:FR-13", 9, "FR-013"),
        (s + "nfr-02-performance", "requirement:FR-13.2", 9, "FR-13.2"),
    ]


def test_look_alikes_are_not_requirements() -> None:
    text = "# Not requirements\nxFR13 FR-13abc FR- FRX FR13-old a-FR9 FR1x 3FR2\n"
    doc = parse_text("x.md", text, DEFAULT_SCHEMA)
    assert [n.node_id for n in doc.nodes if n.node_type == "Requirement"] == []


def test_ids_in_emphasis_links_and_later_lines_are_found_on_their_line() -> None:
    text = "# H\nfirst line\n_FR-5_ and **NFR-6**\n[see FR-7](x.md) and\nthen FR-8.\n"
    doc = parse_text("x.md", text, DEFAULT_SCHEMA)
    assert [(to, line) for _, to, line, _ in typed_edges(doc, "REFERENCES")] == [
        ("requirement:FR-5", 3),
        ("requirement:NFR-6", 3),
        ("requirement:FR-7", 4),
        ("requirement:FR-8", 5),
    ]


def test_ids_in_code_blocks_are_ignored_but_inline_code_counts() -> None:
    doc = parse_text("x.md", "# H\n`FR-1`\n\n```\nFR-2\n```\n", DEFAULT_SCHEMA)
    assert [n.node_id for n in doc.nodes if n.node_type == "Requirement"] == ["requirement:FR-1"]


def test_custom_prefixes() -> None:
    matcher = RequirementMatcher(["REQ", "US"])
    assert [m.canonical for m in matcher.find("REQ7, us-12 and FR-1")] == ["REQ-7", "US-12"]
    leading = matcher.leading("  US12 - checkout")
    assert leading is not None and leading.canonical == "US-12"
    assert matcher.leading("About US-12") is None
