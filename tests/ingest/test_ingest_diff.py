"""The diff between a file's parse and what the graph holds: pure, no database."""

from __future__ import annotations

from kg.events import EdgeAsserted, EdgeRetracted, EdgesAsserted, NodeAsserted, NodeRetired
from kg.events.base import DomainEvent
from kg.ingest import DEFAULT_SCHEMA, parse_text
from kg.ingest.diff import (
    SOURCE_KEY,
    EdgeState,
    ProjectedFile,
    diff_file,
    file_fingerprint,
    graph_edge,
    graph_node,
    schema_fingerprint,
    stream_id,
)
from kg.ingest.schema_map import parse_schema_map
from kg.parsed.model import ParsedDocument

TEXT = """---
owner: team-a
---
# Title

Intro mentions FR-1.

## Goals

See [the plan](plan.md#steps).

## Risks

None.
"""


def projected_from(doc: ParsedDocument, source: dict[str, str] | None) -> ProjectedFile:
    """What the graph would hold after ingesting ``doc`` (requirements are shared, not owned)."""
    files = ProjectedFile()
    for node in doc.nodes:
        if node.node_type != "Requirement":
            is_doc = node.node_id == doc.document_id
            files.nodes[node.node_id] = graph_node(node, source if is_doc else None)
    for edge in doc.edges:
        files.edges[(edge.edge_type, edge.from_node, edge.to_node)] = graph_edge(edge)
    return files


SOURCE = {"path": "docs/a.md", "sha256": "x", "fingerprint": "y"}


def flat(events: list[DomainEvent]) -> list[DomainEvent]:
    """The events with each EdgesAsserted expanded into the EdgeAsserted it stands for."""
    out: list[DomainEvent] = []
    for e in events:
        out += e.edge_events() if isinstance(e, EdgesAsserted) else [e]
    return out


def kinds(events: list[DomainEvent]) -> list[tuple[str, str]]:
    out = []
    for e in flat(events):
        if isinstance(e, NodeAsserted | NodeRetired):
            out.append((type(e).__name__, e.node_id))
        elif isinstance(e, EdgeAsserted | EdgeRetracted):
            out.append((type(e).__name__, f"{e.from_node}|{e.edge_type}|{e.to_node}"))
    return out


def test_a_new_file_asserts_every_node_and_edge_and_its_requirements() -> None:
    doc = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    known: set[str] = set()
    change = diff_file(
        "docs/a.md", doc, ProjectedFile(), source=SOURCE, known_requirements=known, reason="r"
    )
    asserted = {e.node_id: e for e in change.events if isinstance(e, NodeAsserted)}
    assert set(asserted) == {
        "document:docs/a.md",
        "section:docs/a.md#title",
        "section:docs/a.md#goals",
        "section:docs/a.md#risks",
        "requirement:FR-1",
    }
    assert asserted["document:docs/a.md"].properties == {"owner": "team-a", SOURCE_KEY: SOURCE}
    assert known == {"requirement:FR-1"}, "a requirement is asserted once per run"
    edges = {e for k, e in kinds(change.events) if k == "EdgeAsserted"}
    assert "section:docs/a.md#goals|REFERENCES|section:docs/plan.md#steps" in edges
    assert "section:docs/a.md#title|REFERENCES|requirement:FR-1" in edges
    link = next(
        e
        for e in flat(change.events)
        if isinstance(e, EdgeAsserted) and e.to_node.endswith("#steps")
    )
    assert link.properties == {"raw": "plan.md#steps"}, "no line numbers: they churn"
    assert (change.nodes_asserted, change.edges_asserted) == (5, len(doc.edges))
    batched = [e for e in change.events if isinstance(e, EdgesAsserted)]
    assert len(batched) == 1 and len(batched[0].edges) == len(doc.edges), (
        "a file's edges are asserted in one event"
    )
    assert not any(isinstance(e, EdgeAsserted) for e in change.events)


def test_unchanged_content_gives_no_events_and_known_requirements_are_not_reasserted() -> None:
    doc = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    change = diff_file(
        "docs/a.md",
        doc,
        projected_from(doc, SOURCE),
        source=SOURCE,
        known_requirements={"requirement:FR-1"},
        reason="r",
    )
    assert change.events == []


def test_only_the_changed_section_is_asserted_even_when_lines_move() -> None:
    old = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    new_text = TEXT.replace("Intro mentions FR-1.", "Intro\n\nmentions FR-1.\n\nMore.")
    new = parse_text("docs/a.md", new_text, DEFAULT_SCHEMA)
    change = diff_file(
        "docs/a.md",
        new,
        projected_from(old, SOURCE),
        source=SOURCE,
        known_requirements={"requirement:FR-1"},
        reason="r",
    )
    assert kinds(change.events) == [("NodeAsserted", "section:docs/a.md#title")]


def test_a_renamed_heading_retires_the_old_id_and_its_edges_go_with_it() -> None:
    old = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    new = parse_text("docs/a.md", TEXT.replace("## Goals", "## Aims"), DEFAULT_SCHEMA)
    change = diff_file(
        "docs/a.md",
        new,
        projected_from(old, SOURCE),
        source=SOURCE,
        known_requirements={"requirement:FR-1"},
        reason="no longer in docs/a.md",
    )
    events = kinds(change.events)
    assert events[0] == ("NodeRetired", "section:docs/a.md#goals")
    assert ("NodeAsserted", "section:docs/a.md#aims") in events
    assert ("EdgeAsserted", "document:docs/a.md|CONTAINS|section:docs/a.md#aims") in events
    retracted = [e for k, e in events if k == "EdgeRetracted"]
    assert retracted == [], "edges of a retired node are not retracted one by one"
    retired = next(e for e in change.events if isinstance(e, NodeRetired))
    assert retired.reason == "no longer in docs/a.md"


def test_a_removed_link_is_retracted_and_a_dropped_requirement_is_noted() -> None:
    old = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    new_text = TEXT.replace("See [the plan](plan.md#steps).", "No plan.").replace(
        "Intro mentions FR-1.", "Intro."
    )
    new = parse_text("docs/a.md", new_text, DEFAULT_SCHEMA)
    change = diff_file(
        "docs/a.md",
        new,
        projected_from(old, SOURCE),
        source=SOURCE,
        known_requirements={"requirement:FR-1"},
        reason="r",
    )
    retracted = sorted(e for k, e in kinds(change.events) if k == "EdgeRetracted")
    assert retracted == [
        "section:docs/a.md#goals|REFERENCES|section:docs/plan.md#steps",
        "section:docs/a.md#title|REFERENCES|requirement:FR-1",
    ]
    assert change.dropped_requirements == {"requirement:FR-1"}


def test_a_removed_file_retires_everything_it_owned() -> None:
    old = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    change = diff_file(
        "docs/a.md",
        None,
        projected_from(old, SOURCE),
        source=None,
        known_requirements=set(),
        reason="docs/a.md was removed",
    )
    assert change.removed
    assert {k for k, _ in kinds(change.events)} == {"NodeRetired"}
    assert change.nodes_retired == 4
    assert change.dropped_requirements == {"requirement:FR-1"}


def test_an_edge_whose_properties_changed_is_reasserted() -> None:
    doc = parse_text("docs/a.md", TEXT, DEFAULT_SCHEMA)
    projected = projected_from(doc, SOURCE)
    key = ("REFERENCES", "section:docs/a.md#goals", "section:docs/plan.md#steps")
    projected.edges[key] = EdgeState({"raw": "./plan.md#steps"}, 1.0)
    change = diff_file(
        "docs/a.md",
        doc,
        projected,
        source=SOURCE,
        known_requirements={"requirement:FR-1"},
        reason="r",
    )
    assert kinds(change.events) == [("EdgeAsserted", "|".join((key[1], key[0], key[2])))]


def test_fingerprint_changes_with_content_and_schema_map() -> None:
    other = parse_schema_map("rules:\n  - type: Note\n    paths: ['*.md']\n", "inline")
    base = file_fingerprint("h1", schema_fingerprint(DEFAULT_SCHEMA))
    assert base == file_fingerprint("h1", schema_fingerprint(DEFAULT_SCHEMA))
    assert base != file_fingerprint("h2", schema_fingerprint(DEFAULT_SCHEMA))
    assert base != file_fingerprint("h1", schema_fingerprint(other))


def test_stream_ids_fit_the_store_limit() -> None:
    assert stream_id("docs/a.md") == "doc:docs/a.md"
    long = "d/" * 300 + "a.md"
    assert stream_id(long).startswith("doc:sha256:") and len(stream_id(long)) <= 500
    assert stream_id(long) != stream_id(long + "x")
