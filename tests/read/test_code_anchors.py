"""Code as anchors: ``path:line`` names the symbol there, and a build around a method brings
its callers, its callees and the spec sections that name it."""

from __future__ import annotations

import shutil
from pathlib import Path

from kg.context.service import build_context_graph, parse_request
from kg.graph_queries import get_entity_neighbors
from kg.ingest.service import ingest_paths
from kg.runtime import Runtime
from tests.ingest.code.fixture import SHOP_REPO

PAY = "function:shop/checkout.py#Checkout.pay"


async def ingested_shop(runtime: Runtime, root: Path) -> None:
    shutil.copytree(SHOP_REPO, root, dirs_exist_ok=True)
    report = await ingest_paths(runtime, None)
    assert report.errors == []


async def test_a_line_of_a_method_anchors_a_build_on_that_method(
    runtime: Runtime, tmp_path: Path
) -> None:
    await ingested_shop(runtime, tmp_path)
    request = parse_request(anchors=["shop/checkout.py:25"], max_depth=1, token_budget=4000)
    graph = await build_context_graph(runtime, request)
    by_id = {n.node_id: n for n in graph.nodes}
    assert by_id[PAY].reason == "anchor"
    # its caller, its callees, its class and the spec section that names it
    assert {
        "function:shop/cli.py#main",
        "function:shop/orders.py#Order.total",
        "function:shop/payments.py#Gateway.charge",
        "class:shop/checkout.py#Checkout",
        "section:docs/prd.md#payments",
    } <= set(by_id)
    assert by_id[PAY].content.startswith("def pay(self, order: Order) -> bool:")


async def test_a_line_outside_every_symbol_names_the_file_and_a_bare_path_too(
    runtime: Runtime, tmp_path: Path
) -> None:
    await ingested_shop(runtime, tmp_path)
    for anchor in ("shop/checkout.py:2", "shop/checkout.py"):
        graph = await build_context_graph(runtime, parse_request(anchors=[anchor], max_depth=1))
        assert [n.node_id for n in graph.nodes if n.reason == "anchor"] == [
            "document:shop/checkout.py"
        ]


async def test_neighbours_of_a_method_by_calls_are_its_callers_and_callees(
    runtime: Runtime, tmp_path: Path
) -> None:
    await ingested_shop(runtime, tmp_path)
    result = await get_entity_neighbors(runtime, "shop/checkout.py:25", edge_types=["CALLS"])
    assert result.node.node_id == PAY
    callers = {e.from_node for e in result.edges if e.to_node == PAY}
    callees = {e.to_node for e in result.edges if e.from_node == PAY}
    assert callers == {"function:shop/cli.py#main"}
    assert callees == {
        "function:shop/orders.py#Order.total",
        "function:shop/orders.py#Order.describe",
        "function:shop/payments.py#Gateway.charge",
        "function:shop/checkout.py#Checkout.remember",
    }
