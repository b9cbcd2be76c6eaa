"""Entity names wherever a tool takes a node id: find_path, get_entity_neighbors, anchors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.context.service import build_context_graph, parse_request
from kg.errors import NotFoundError, ValidationError
from kg.events import PolicyDefined
from kg.graph_queries import find_path, get_entity_neighbors
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.runtime import Runtime

SCHEMA = """\
entities:
  presets: [endpoints, events, bold_terms, relationships, glossary]
  bold_terms: APIObject
"""

FILES = {
    ".kg/schema.yaml": SCHEMA,
    "docs/billing.md": (
        "# Billing\n\nA **Subscription** generates an **Invoice**. An **Invoice** requires a "
        "**Charge**. A **Charge** triggers `charge.succeeded`.\n"
    ),
    "docs/glossary.md": "# Glossary\n\n**Charge**: money taken from a customer.\n",
}


@pytest.fixture
async def billing(runtime: Runtime, tmp_path: Path) -> Runtime:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.problems == []
    return runtime


async def test_find_path_and_neighbors_walk_the_chain_by_names(billing: Runtime) -> None:
    path = await find_path(billing, "Subscription", "Invoice")
    assert path.found and (path.source, path.target) == (
        "apiobject:subscription",
        "apiobject:invoice",
    )
    assert [e.edge_type for e in path.edges] == ["GENERATES"]
    chain = await get_entity_neighbors(
        billing,
        "Subscription",
        edge_types=("GENERATES", "REQUIRES", "TRIGGERS"),
        depth=3,
        direction="out",
    )
    assert [(n.node_id, n.hop) for n in chain.neighbors] == [
        ("apiobject:invoice", 1),
        ("apiobject:charge", 2),
        ("event:charge.succeeded", 3),
    ]


async def test_neighbors_accept_a_plural_or_lower_case_name(billing: Runtime) -> None:
    result = await get_entity_neighbors(billing, "invoices", direction="out")
    assert result.node.node_id == "apiobject:invoice"
    assert [n.node_id for n in result.neighbors] == ["apiobject:charge"]


async def test_an_ambiguous_name_lists_its_candidates(billing: Runtime) -> None:
    # "Charge" is an APIObject (bold) and a Concept (the glossary defines it).
    with pytest.raises(ValidationError) as caught:
        await get_entity_neighbors(billing, "Charge")
    message = str(caught.value)
    assert "the name 'Charge' is ambiguous" in message
    assert "apiobject:charge (APIObject)" in message and "concept:charge (Concept)" in message
    assert "pass one of these node ids" in message


async def test_a_denied_candidate_is_never_named_nor_chosen(billing: Runtime) -> None:
    deny = PolicyDefined(
        policy_id="policy:no-concepts",
        name="Concepts are internal",
        rule=PolicyRule(effect="deny", node_types=("Concept",)),
    )
    await billing.store.append(billing.scope, "policies", [deny])
    result = await get_entity_neighbors(billing, "Charge", direction="out")
    assert result.node.node_id == "apiobject:charge"
    with pytest.raises(NotFoundError) as caught:
        await get_entity_neighbors(billing, "no such thing")
    assert "entity name" in str(caught.value)


async def test_anchors_may_be_names_and_the_log_records_the_id(billing: Runtime) -> None:
    request = parse_request(anchors=("Subscription",), mode="anchor", max_depth=3)
    graph = await build_context_graph(billing, request)
    ids = {n.node_id for n in graph.nodes}
    assert {"apiobject:subscription", "apiobject:invoice", "apiobject:charge"} <= ids
    logged = await billing.system_pool.fetchval(
        "SELECT payload->'request'->'anchors' FROM kg_events WHERE event_type = 'ContextGraphBuilt'"
    )
    assert logged == ["apiobject:subscription"]


async def test_paths_and_requirement_ids_name_nodes_for_anchors_and_references(
    billing: Runtime, tmp_path: Path
) -> None:
    """Issue 30 item 7: `kg inspect` took `docs/prd.md` and `FR1`, context-build anchors and
    decision references refused both. Every tool resolves references in one place."""
    from kg.decisions import record_decision

    (tmp_path / "docs/prd.md").write_text("# PRD\n\n## Billing\n\nFR1 bills monthly.\n")
    await ingest_paths(billing, [tmp_path / "docs/prd.md"])

    graph = await build_context_graph(
        billing, parse_request(anchors=["docs/billing.md", "FR1", "docs/prd.md#billing"])
    )
    anchors = {n.node_id for n in graph.nodes if n.reason == "anchor"}
    assert anchors == {
        "document:docs/billing.md", "requirement:FR-1", "section:docs/prd.md#billing"
    }  # fmt: skip
    decided = await record_decision(
        billing, text="Bill monthly", references=["docs/prd.md", "fr-1", "Subscription"]
    )
    import json

    payload = await billing.system_pool.fetchval(
        "SELECT payload::text FROM kg_events WHERE position = $1", decided.position
    )
    assert set(json.loads(payload)["references"]) == {
        "document:docs/prd.md", "requirement:FR-1", "apiobject:subscription"
    }  # fmt: skip
    with pytest.raises(NotFoundError, match=r"docs/nope\.md"):
        await build_context_graph(billing, parse_request(anchors=["docs/nope.md"]))
    with pytest.raises(NotFoundError, match=r"docs/nope\.md"):
        await record_decision(billing, text="x", references=["docs/nope.md"])


async def test_a_bare_requirement_id_names_its_one_definition_or_lists_the_candidates(
    runtime: Runtime, tmp_path: Path
) -> None:
    """Requirements are scoped to the document that defines them (two SpecKit runs each have
    an FR-001): a bare id still names one when one document defines it, and says which
    documents do when several do; the old project-wide id keeps working the same way."""
    files = {
        "specs/001-cart/spec.md": "# Cart\n\n- **FR-001**: Keep the cart.\n"
        "- **FR-002**: Show the total.\n",
        "specs/002-pay/spec.md": "# Pay\n\n- **FR-001**: Take the card.\n"
        "- **FR-009**: Refund within a day.\n",
        "specs/002-pay/plan.md": "# Plan\n\nFR-001 goes first, then FR-009.\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    report = await ingest_paths(runtime, [tmp_path / "specs"])
    assert report.problems == []
    pay = "requirement:specs/002-pay/spec.md#"

    for ref in ("FR-009", "fr9", "requirement:FR-9", "specs/002-pay/spec.md#FR-009"):
        result = await get_entity_neighbors(runtime, ref)
        assert result.node.node_id == pay + "FR-9", ref
    # The plan's FR-001 is its own feature's, not the cart's.
    result = await get_entity_neighbors(runtime, "specs/002-pay/spec.md#FR-001")
    assert result.node.node_id == pay + "FR-1"
    assert {n.node_id for n in result.neighbors} >= {"section:specs/002-pay/plan.md#plan"}
    assert "section:specs/001-cart/spec.md#cart" not in {n.node_id for n in result.neighbors}

    for ref in ("FR-001", "requirement:FR-1"):
        with pytest.raises(ValidationError) as caught:
            await get_entity_neighbors(runtime, ref)
        message = str(caught.value)
        assert "is defined by 2 documents" in message, message
        assert "requirement:specs/001-cart/spec.md#FR-1" in message and pay + "FR-1" in message
