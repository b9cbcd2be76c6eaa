"""Search, neighbours and paths as agents get them: policy-checked."""

from __future__ import annotations

import pytest

from kg.errors import NotFoundError, PolicyDeniedError, ValidationError
from kg.graph_queries import find_path, get_entity_neighbors, query_knowledge_graph
from kg.runtime import Runtime


async def test_query_drops_denied_nodes_and_redacts(shop: Runtime) -> None:
    result = await query_knowledge_graph(shop, "vault", mode="fulltext", limit=10)
    ids = [r.node_id for r in result.results]
    assert ids == ["component:hsm"] and result.excluded_by_policy == 1
    assert "VAULT-SECRET" not in str(result)
    cards = await query_knowledge_graph(shop, "card", mode="hybrid", limit=10)
    card = next(r for r in cards.results if r.node_id == "document:card-data")
    assert card.redacted and card.name == "[redacted]" and card.content == ""
    assert card.labels == [], "redacted: id and type only"


async def test_neighbors_respect_direction_depth_and_policy(shop: Runtime) -> None:
    out = await get_entity_neighbors(shop, "component:payments", direction="out")
    assert {n.node_id for n in out.neighbors} == {
        "document:card-data",
        "policy:checkout-actions",
    }
    assert out.excluded_by_policy == 1, "the vault is an out-neighbour, denied"
    incoming = await get_entity_neighbors(shop, "component:payments", direction="in")
    assert [n.node_id for n in incoming.neighbors] == ["component:checkout"]
    deep = await get_entity_neighbors(shop, "component:checkout", depth=2)
    assert {"component:hsm", "component:vault"}.isdisjoint(n.node_id for n in deep.neighbors)


async def test_find_path_goes_either_way_but_never_through_a_denied_node(shop: Runtime) -> None:
    path = await find_path(shop, "adr:0007", "document:card-data")
    assert path.found and [n.node_id for n in path.nodes] == [
        "adr:0007",
        "component:checkout",
        "component:payments",
        "document:card-data",
    ]
    assert path.edges[0].model_dump() == {
        "edge_type": "REFERENCES",
        "from_node": "component:checkout",
        "to_node": "adr:0007",
        "weight": 0.5,
    }
    blocked = await find_path(shop, "component:checkout", "component:hsm")
    assert not blocked.found or "component:vault" not in str(blocked)


async def test_errors_name_the_problem(shop: Runtime) -> None:
    with pytest.raises(NotFoundError, match="component:nope"):
        await get_entity_neighbors(shop, "component:nope")
    with pytest.raises(PolicyDeniedError, match="denied"):
        await get_entity_neighbors(shop, "component:vault")
    with pytest.raises(ValidationError, match="direction"):
        await get_entity_neighbors(shop, "component:checkout", direction="up")
    with pytest.raises(ValidationError, match="max_depth"):
        await find_path(shop, "adr:0007", "project:shop", max_depth=50)
    with pytest.raises(ValidationError, match="mode"):
        await query_knowledge_graph(shop, "x", mode="fuzzy")


async def test_get_node_of_a_document_gives_its_outline_without_denied_sections(
    runtime: Runtime,
) -> None:
    """Issue 30 item 10: get_node of a document returned only its title."""
    from kg.events import PolicyDefined
    from kg.graph_queries import MAX_OUTLINE, get_node
    from kg.ingest.service import ingest_paths
    from kg.policies.model import PolicyRule

    doc = runtime.settings.project_root / "docs" / "prd.md"
    doc.parent.mkdir(parents=True)
    doc.write_text(
        "# PRD\n\nThe product.\n\n## Goals\n\nShip.\n\n### Non-goals\n\nNone.\n\n"
        "## Secret plans\n\nHidden.\n\n## Risks\n\nFew.\n"
    )
    await ingest_paths(runtime, None)

    found = await get_node(runtime, "docs/prd.md")
    assert [(s.node_id, s.name, s.level) for s in found.outline] == [
        ("section:docs/prd.md#prd", "PRD", 1),
        ("section:docs/prd.md#goals", "Goals", 2),
        ("section:docs/prd.md#non-goals", "Non-goals", 3),
        ("section:docs/prd.md#secret-plans", "Secret plans", 2),
        ("section:docs/prd.md#risks", "Risks", 2),
    ]
    assert not found.outline_truncated

    await runtime.store.append(runtime.scope, "policies", [PolicyDefined(
        policy_id="policy:secret", name="secret",
        rule=PolicyRule(effect="deny", node_ids=("section:docs/prd.md#secret-plans",)),
    )])  # fmt: skip
    hidden = await get_node(runtime, "docs/prd.md")
    assert "secret-plans" not in hidden.model_dump_json() and "Secret" not in str(hidden.outline)
    assert [s.name for s in hidden.outline] == ["PRD", "Goals", "Non-goals", "Risks"]
    assert hidden.excluded_by_policy == 1

    long = runtime.settings.project_root / "docs" / "long.md"
    long.write_text("# Long\n\n" + "".join(f"## Part {i}\n\nText {i}.\n\n" for i in range(120)))
    await ingest_paths(runtime, None)
    bounded = await get_node(runtime, "docs/long.md")
    assert len(bounded.outline) == MAX_OUTLINE and bounded.outline_truncated
    assert [s.name for s in bounded.outline[:2]] == ["Long", "Part 0"]
