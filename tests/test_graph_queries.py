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
