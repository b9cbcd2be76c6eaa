"""Issue 30 item 7 over MCP (a real client, ``kg mcp`` over stdio): every tool that takes a
node reads the same names and answers a name that names nothing, or several nodes, alike."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession

from kg.read.names import HOW_TO_NAME
from kg.runtime import Runtime
from tests.mcp.client import call, error_text, ok, server_env, stdio_session, text_of
from tests.read.test_one_way_to_name_a_node import NAMES, PAY
from tests.read.test_one_way_to_name_a_node import project as project  # the fixture

Via = Callable[[ClientSession, str], Awaitable[Any]]


async def _get_node(session: ClientSession, name: str) -> Any:
    return await call(session, "get_node", node_id=name)


async def _neighbours(session: ClientSession, name: str) -> Any:
    return await call(session, "get_entity_neighbors", node_id=name)


async def _find_path(session: ClientSession, name: str) -> Any:
    return await call(session, "find_path", source=name, target="docs/prd.md")


async def _anchor(session: ClientSession, name: str) -> Any:
    return await call(session, "build_context_graph", anchors=[name], max_depth=1)


async def _reference(session: ClientSession, name: str) -> Any:
    return await call(session, "record_decision", text="Pay by gateway", references=[name])


TOOLS: dict[str, tuple[Via, Callable[[dict[str, Any]], str]]] = {
    "get_node": (_get_node, lambda r: str(r["node_id"])),
    "get_entity_neighbors": (_neighbours, lambda r: str(r["node"]["node_id"])),
    "find_path": (_find_path, lambda r: str(r["source"])),
    "build_context_graph": (
        _anchor,
        lambda r: next(n["node_id"] for n in r["nodes"] if n["reason"] == "anchor"),
    ),
}


async def test_every_tool_reads_every_kind_of_name(
    project: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        for tool, (via, answer) in TOOLS.items():
            for name, node_id in NAMES.items():
                assert answer(ok(await via(session, name))) == node_id, (tool, name)
        prd = await _get_node(session, "docs/prd.md")  # item 10: a document's outline
        assert [s["node_id"] for s in ok(prd)["outline"]] == [
            "section:docs/prd.md#shop-prd", "section:docs/prd.md#orders",
            "section:docs/prd.md#payments",
        ]  # fmt: skip
        assert "- Payments (section:docs/prd.md#payments)" in text_of(prd)
        decided = ok(await _reference(session, "shop/checkout.py:25"))
        out = ok(await call(session, "get_entity_neighbors", node_id=decided["node_id"],
                            direction="out"))  # fmt: skip
        assert PAY in {n["node_id"] for n in out["neighbors"]}
        traced = ok(await call(session, "trace_decision_lineage",
                               decision_id=decided["decision_id"]))  # fmt: skip
        assert traced["decision_id"] == decided["node_id"]


@pytest.mark.parametrize("name", ["docs/nope.md", "shop/nope.py:3", "Refundable Gizmo"])
async def test_every_tool_answers_a_name_that_names_nothing_alike(
    project: Runtime, db_url: str, tmp_path: Path, name: str
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        for tool, via in {
            **{t: v for t, (v, _) in TOOLS.items()},
            "record_decision": _reference,
        }.items():
            message = " ".join(error_text(await via(session, name)).split())
            assert f"{name} not found in this project" in message, (tool, message)
            assert HOW_TO_NAME in message, (tool, message)


async def test_every_tool_lists_the_candidates_of_an_ambiguous_name(
    project: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        for tool, via in {
            **{t: v for t, (v, _) in TOOLS.items()},
            "record_decision": _reference,
        }.items():
            message = " ".join(error_text(await via(session, "Charge")).split())
            assert "the name 'Charge' is ambiguous" in message, (tool, message)
            assert "apiobject:charge (APIObject), concept:charge (Concept)" in message, tool
        lineage = error_text(await call(session, "trace_decision_lineage", decision_id="FR1"))
        assert "'FR1' names 'requirement:docs/prd.md#FR-1', not a decision" in lineage
