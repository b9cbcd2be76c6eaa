"""The redaction shape is decided once, in ``kg.policies.redaction``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from kg.context.fit import shown_node
from kg.errors import PolicyDeniedError
from kg.policies.model import REDACTED_NAME, NodeVerdict
from kg.policies.redaction import REDACTED, visible
from kg.projections.graph_reader import NodeRow

ROW = NodeRow(
    "document:card", "Document", "Card data", "PAN layout", {"path": "docs/card.md"},
    ("sensitive",), datetime(2026, 1, 1, tzinfo=UTC), ("policy:redact",),
)  # fmt: skip


def test_an_allowed_node_is_seen_whole() -> None:
    shown = visible(ROW, NodeVerdict())
    assert (shown.name, shown.content, shown.labels, shown.redacted) == (
        "Card data", "PAN layout", ("sensitive",), False,
    )  # fmt: skip
    assert shown.properties == {"path": "docs/card.md"}


def test_a_redacted_node_keeps_nothing_but_its_id_and_type() -> None:
    shown = visible(ROW, NodeVerdict(redacted_by=["policy:redact"]))
    assert shown == REDACTED
    assert (shown.name, shown.content, shown.labels, dict(shown.properties)) == (
        REDACTED_NAME, "", (), {},
    )  # fmt: skip


def test_a_denied_node_has_no_visible_form() -> None:
    both = NodeVerdict(denied_by=["policy:deny"], redacted_by=["policy:redact"])
    with pytest.raises(PolicyDeniedError) as refused:
        visible(ROW, both)
    assert "card" not in str(refused.value).lower()


def test_a_context_graph_node_has_the_same_redacted_shape() -> None:
    node = shown_node(ROW, redacted=True, score=1.0, reason="anchor", hop=0, chars=500, query=[])
    assert (node.name, node.content, dict(node.properties), node.labels, node.redacted) == (
        REDACTED.name, REDACTED.content, dict(REDACTED.properties), REDACTED.labels, True,
    )  # fmt: skip
