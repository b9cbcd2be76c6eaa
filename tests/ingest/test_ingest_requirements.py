"""Requirement ids: nodes scoped to the defining document, DEFINES by headings, list items and
table rows, REFERENCES from mentioning sections to the nearest definition."""

from __future__ import annotations

from kg.ingest import DEFAULT_SCHEMA, ParsedDocument, parse_text
from kg.ingest.links import WikiIndex
from kg.ingest.requirements import RequirementIndex, RequirementMatcher

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


def test_requirement_nodes_are_canonical_and_scoped_to_the_defining_document() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    reqs = [n for n in doc.nodes if n.node_type == "Requirement"]
    assert [n.node_id for n in reqs] == [
        "requirement:docs/prd.md#FR-13",
        "requirement:docs/prd.md#NFR-2",
        # mentioned, defined by no document: the project-wide id, as before
        "requirement:FR-7",
        "requirement:FR-12",
        "requirement:FR-13.2",
    ]
    assert all(n.labels == ("Requirement",) and n.node_id.endswith(n.name) for n in reqs)
    assert reqs[0].line == 5  # the defining heading


def test_headings_starting_with_an_id_define_it() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    s = "section:docs/prd.md#"
    assert typed_edges(doc, "DEFINES") == [
        (s + "fr-13-login", "requirement:docs/prd.md#FR-13", 5, "FR-13"),
        (s + "nfr-02-performance", "requirement:docs/prd.md#NFR-2", 8, "NFR-02"),
    ]


def test_mentions_become_references_from_the_mentioning_section() -> None:
    doc = parse_text("docs/prd.md", TEXT, DEFAULT_SCHEMA)
    s = "section:docs/prd.md#"
    assert typed_edges(doc, "REFERENCES") == [
        ("document:docs/prd.md", "requirement:FR-7", 1, "FR7"),
        (s + "fr-13-login", "requirement:FR-12", 6, "FR12"),
        (s + "fr-13-login", "requirement:docs/prd.md#NFR-2", 6, "nfr-2"),
        # FR-13 mentioned in its own defining section is not also a reference
        (s + "nfr-02-performance", "requirement:docs/prd.md#FR-13", 9, "FR-013"),
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


SPEC = """\
# Feature: checkout

## Requirements

- **FR-001**: System MUST keep the cart for 30 days.
- **FR-002**: System MUST accept UTF-8 names (see FR-001).

### Success criteria

- **SC-001**: 90% of carts are recovered.
- **SC-002**: Checkout takes under a minute, as SC-001 assumes.

| Story | Title |
| --- | --- |
| US1 | Keep the cart |
| US2 | Pay |

## Named

- **CORE-FR-LOCK**: one writer at a time; PKG-FR-3 builds on it.
"""


def test_list_items_table_rows_and_families_define_ids_of_any_prefix() -> None:
    doc = parse_text("specs/003-checkout/spec.md", SPEC, DEFAULT_SCHEMA)
    s, r = "section:specs/003-checkout/spec.md#", "requirement:specs/003-checkout/spec.md#"
    assert typed_edges(doc, "DEFINES") == [
        (s + "requirements", r + "FR-1", 5, "FR-001"),
        (s + "requirements", r + "FR-2", 6, "FR-002"),
        (s + "success-criteria", r + "SC-1", 10, "SC-001"),
        (s + "success-criteria", r + "SC-2", 11, "SC-002"),
        (s + "success-criteria", r + "US-1", 15, "US1"),
        (s + "success-criteria", r + "US-2", 16, "US2"),
        (s + "named", r + "CORE-FR-LOCK", 20, "CORE-FR-LOCK"),
    ]
    assert typed_edges(doc, "REFERENCES") == [
        # PKG-FR-3 is of a configured kind (FR), named nowhere: the project-wide id
        (s + "named", "requirement:PKG-FR-3", 20, "PKG-FR-3"),
    ]


def test_standards_versions_and_tasks_are_never_requirements() -> None:
    """Names of standards look like ids (letters, a dash, a number); they are never stated
    as a family of definitions, so they stay text, even in a glossary's list."""
    text = """\
# Glossary

- **UTF-8**: the encoding of every file.
- **SHA-256**: the digest; SHA-512 is not used.
- **ISO-8601**: dates; HTTP-2 and TLS-1.3 on the wire.
| RFC-9162 | Merkle trees |

## Tasks

- [ ] T001 Create the project
- [ ] T002 Add the tests
"""
    doc = parse_text("docs/glossary.md", text, DEFAULT_SCHEMA)
    assert [n.node_id for n in doc.nodes if n.node_type == "Requirement"] == []
    matcher = RequirementMatcher()
    assert matcher.definitions(text) == []
    assert list(matcher.find("UTF-8 SHA-256 ISO-8601 HTTP-2 T001 US1")) == []


def test_a_mention_means_the_nearest_definition_not_every_feature() -> None:
    index = RequirementIndex(
        [
            ("specs/003-checkout/spec.md", "FR-1"),
            ("specs/004-search/spec.md", "FR-1"),
            ("specs/004-search/spec.md", "SC-1"),
            ("docs/prd.md", "FR-9"),
            ("docs/prd.md", "FR-10"),
            ("docs/epics.md", "FR-10"),
        ]
    )
    assert index.targets("FR-1", "specs/003-checkout/plan.md") == [
        "requirement:specs/003-checkout/spec.md#FR-1"
    ]
    assert index.targets("FR-1", "specs/004-search/contracts/api.md") == [
        "requirement:specs/004-search/spec.md#FR-1"
    ]
    assert index.targets("FR-1", "specs/004-search/spec.md") == [
        "requirement:specs/004-search/spec.md#FR-1"
    ]
    # From outside both features: two definitions in two folders, so none is meant.
    assert index.targets("FR-1", "docs/overview.md") == []
    # One definition in the project: it, from anywhere.
    assert index.targets("FR-9", "README.md") == ["requirement:docs/prd.md#FR-9"]
    # A PRD and the epics restating one of its requirements, files of one folder: the one
    # defining more of the family.
    assert index.targets("FR-10", "docs/architecture.md") == ["requirement:docs/prd.md#FR-10"]
    # Files of one folder defining as much of it: both.
    both = RequirementIndex([("a/prd.md", "NFR-1"), ("a/epics.md", "NFR-1")])
    assert both.targets("NFR-1", "a/arch.md") == [
        "requirement:a/epics.md#NFR-1",
        "requirement:a/prd.md#NFR-1",
    ]
    assert index.targets("FR-77", "docs/a.md") is None

    plan = "# Plan\n\nCovers FR-001 and SC-001; UTF-8 everywhere.\n"
    doc = parse_text(
        "specs/004-search/plan.md", plan, DEFAULT_SCHEMA, WikiIndex([], requirements=index)
    )
    assert typed_edges(doc, "REFERENCES") == [
        ("section:specs/004-search/plan.md#plan", "requirement:specs/004-search/spec.md#FR-1",
         3, "FR-001"),
        ("section:specs/004-search/plan.md#plan", "requirement:specs/004-search/spec.md#SC-1",
         3, "SC-001"),
    ]  # fmt: skip
    overview = parse_text(
        "docs/overview.md", "# O\n\nFR-001 again.\n", DEFAULT_SCHEMA, WikiIndex([], None, index)
    )
    assert typed_edges(overview, "REFERENCES") == []
