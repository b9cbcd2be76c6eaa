"""``kg new``: templates land in the typed folders and pass lint."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from kg.errors import ValidationError
from kg.ingest import parse_markdown
from kg.ingest.service import lint_files
from kg.ingest.templates import new_document


@pytest.mark.parametrize(
    ("kind", "relpath", "node_type"),
    [
        ("epic", "docs/epics/checkout-revamp.md", "Epic"),
        ("story", "docs/stories/checkout-revamp.md", "Story"),
        ("adr", "docs/adr/0001-checkout-revamp.md", "ADR"),
        ("rule", "docs/rules/checkout-revamp.md", "Rule"),
    ],
)
def test_each_template_is_typed_and_lint_clean(
    tmp_path: Path, kind: str, relpath: str, node_type: str
) -> None:
    path = new_document(tmp_path, kind, "Checkout revamp", today=date(2026, 1, 2))
    assert path == tmp_path / relpath
    doc = parse_markdown(tmp_path, path)
    assert doc.nodes[0].node_type == node_type
    assert doc.problems == ()
    assert lint_files(tmp_path) == []


def test_adrs_are_numbered_and_stories_link_their_epic(tmp_path: Path) -> None:
    first = new_document(tmp_path, "adr", "Use PostgreSQL", today=date(2026, 1, 2))
    second = new_document(tmp_path, "adr", "Use: pgvector?", today=date(2026, 1, 2))
    assert (first.name, second.name) == ("0001-use-postgresql.md", "0002-use-pgvector.md")
    second_doc = parse_markdown(tmp_path, second)
    assert second_doc.nodes[0].name == "ADR-0002: Use: pgvector?"
    assert second_doc.nodes[0].properties["date"] == "2026-01-02"

    epic = new_document(tmp_path, "epic", "Payments")
    story = new_document(tmp_path, "story", "Pay by card", epic=epic)
    doc = parse_markdown(tmp_path, story)
    refs = {e.to_node for e in doc.edges if e.edge_type == "REFERENCES"}
    assert refs == {"document:docs/epics/payments.md"}
    assert doc.nodes[0].properties["epic"] == "docs/epics/payments.md"
    assert lint_files(tmp_path) == []


def test_refuses_to_overwrite_and_rejects_bad_input(tmp_path: Path) -> None:
    new_document(tmp_path, "epic", "Payments")
    with pytest.raises(ValidationError, match="already exists"):
        new_document(tmp_path, "epic", "payments")
    with pytest.raises(ValidationError, match="no letters or digits"):
        new_document(tmp_path, "rule", "!!!")
    with pytest.raises(ValidationError, match="unknown kind"):
        new_document(tmp_path, "memo", "x")
    with pytest.raises(ValidationError, match="outside the project root"):
        new_document(tmp_path, "epic", "x", folder=Path("../elsewhere"))
    with pytest.raises(ValidationError, match="not a Markdown file of this project"):
        new_document(tmp_path, "story", "x", epic=Path("docs/epics/missing.md"))
