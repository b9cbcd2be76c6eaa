"""Issue 30 item 7: every function that takes a node reads the same names (id, path,
``path#anchor``, ``path:line``, requirement id, entity name), resolved in one place
(:mod:`kg.read.names`), with one typed error when nothing or several match."""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from kg.context.service import build_context_graph, parse_request
from kg.decisions import record_decision
from kg.errors import ValidationError
from kg.graph_queries import find_path, get_entity_neighbors, get_node
from kg.ingest.service import ingest_paths
from kg.lineage import trace_decision_lineage
from kg.read.names import HOW_TO_NAME, AmbiguousNameError, UnknownNodeError
from kg.runtime import Runtime
from tests.ingest.code.fixture import SHOP_REPO
from tests.read.test_names import FILES

PAY = "function:shop/checkout.py#Checkout.pay"
#: what a user or an agent types -> the node it names
NAMES = {
    "section:docs/prd.md#orders": "section:docs/prd.md#orders",
    "docs/prd.md": "document:docs/prd.md",
    "docs/prd.md#Payments": "section:docs/prd.md#payments",
    "shop/checkout.py:25": PAY,
    "shop/checkout.py": "document:shop/checkout.py",
    "shop/checkout.py:2": "document:shop/checkout.py",
    # the PRD defines them ("FR-1: ..."): its requirements, not the code's project-wide ids
    "FR2": "requirement:docs/prd.md#FR-2",
    "fr-1": "requirement:docs/prd.md#FR-1",
    "Subscriptions": "apiobject:subscription",
}


@pytest.fixture
async def project(runtime: Runtime, tmp_path: Path) -> Runtime:
    """The shop repository (code and its PRD with FR-1, FR-2) and the billing documents
    (extracted entities; "Charge" is an APIObject and a Concept)."""
    shutil.copytree(SHOP_REPO, tmp_path, dirs_exist_ok=True)
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    report = await ingest_paths(runtime, None)
    assert report.errors == []
    return runtime


async def _via_get_node(rt: Runtime, name: str) -> str:
    return (await get_node(rt, name)).node_id


async def _via_neighbours(rt: Runtime, name: str) -> str:
    return (await get_entity_neighbors(rt, name)).node.node_id


async def _via_find_path(rt: Runtime, name: str) -> str:
    path = await find_path(rt, name, name)
    assert path.target == path.source
    return path.source


async def _via_anchor(rt: Runtime, name: str) -> str:
    graph = await build_context_graph(rt, parse_request(anchors=[name], max_depth=1))
    (anchor,) = [n.node_id for n in graph.nodes if n.reason == "anchor"]
    return anchor


async def _via_reference(rt: Runtime, name: str) -> str:
    decided = await record_decision(rt, text="Charge through the gateway", references=[name])
    payload = await rt.system_pool.fetchval(
        "SELECT payload::text FROM kg_events WHERE position = $1", decided.position
    )
    (reference,) = json.loads(payload)["references"]
    return str(reference)


ENTRY_POINTS: dict[str, Callable[[Runtime, str], Awaitable[str]]] = {
    "get_node": _via_get_node,
    "get_entity_neighbors": _via_neighbours,
    "find_path": _via_find_path,
    "build_context_graph anchors": _via_anchor,
    "record_decision references": _via_reference,
}


async def test_every_entry_point_reads_every_kind_of_name(project: Runtime) -> None:
    for entry, via in ENTRY_POINTS.items():
        for name, node_id in NAMES.items():
            assert await via(project, name) == node_id, (entry, name)


async def test_nothing_named_is_one_typed_error_naming_the_input_and_the_fix(
    project: Runtime,
) -> None:
    for entry, via in ENTRY_POINTS.items():
        for name in ("docs/nope.md", "shop/nope.py:3", "FR99", "Refundable Gizmo"):
            with pytest.raises(UnknownNodeError) as caught:
                await via(project, name)
            message = str(caught.value)
            assert name in message and "not found in this project" in message, (entry, name)
            assert HOW_TO_NAME in message, (entry, name)


async def test_a_name_several_nodes_answer_to_lists_them_at_every_entry_point(
    project: Runtime,
) -> None:
    for entry, via in ENTRY_POINTS.items():
        with pytest.raises(AmbiguousNameError) as caught:
            await via(project, "Charge")
        message = str(caught.value)
        assert "apiobject:charge (APIObject)" in message, entry
        assert "concept:charge (Concept)" in message, entry
        assert "pass one of these node ids" in message, entry


async def test_lineage_takes_a_decision_by_id_and_says_what_another_name_names(
    project: Runtime,
) -> None:
    decided = await record_decision(project, text="Bill monthly", references=["FR1"])
    for name in (decided.decision_id, decided.node_id):
        assert (await trace_decision_lineage(project, name)).decision_id == decided.node_id
    with pytest.raises(UnknownNodeError, match="decision:nope not found in this project"):
        await trace_decision_lineage(project, "nope")
    with pytest.raises(
        ValidationError, match=r"'docs/prd\.md' names 'document:docs/prd\.md', not a "
    ):
        await trace_decision_lineage(project, "docs/prd.md")
