"""Every MCP tool applies the policies: the tools' half of ``tests/cli/test_cli_policy.py``.

Over the same graph (the shop, with a denied vault, a redacted card document and a decision a
policy denies: ``tests.shop.decide_over_shop``), each tool that reads the graph is called
through a real MCP client, with arguments that reach for what the policies withhold, and
neither its text, nor its structured content, nor its error message may carry it. Every tool
is either called here or listed as not returning graph content, with the reason.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp_types import CallToolResult, Implementation

from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import TOOLS, text_of
from tests.shop import SECRETS

CLIENT = Implementation(name="policy-walk", version="1")
CG = "$context_graph"  # replaced by the fixture's context graph id

READS_THE_GRAPH: dict[str, list[dict[str, Any]]] = {
    "build_context_graph": [
        {"anchors": ["component:payments"], "max_depth": 3},
        {"anchors": ["component:vault"]},
        {"task": "vault secret card content hidden decision", "mode": "semantic"},
        {"anchors": ["component:checkout"], "mode": "policy_first"},
        {"anchors": ["decision:open"], "max_depth": 2},
    ],
    "query_knowledge_graph": [
        {"text": "vault secret", "mode": "fulltext"},
        {"text": "vault secret name content card hidden decision"},
        {"text": "HIDDEN-DECISION rotate vault keys", "mode": "fulltext"},
        {"text": "card content", "node_types": ["Document"]},
    ],
    "get_node": [
        {"node_id": "component:vault"},
        {"node_id": "document:card-data"},
        {"node_id": "decision:hidden"},
    ],
    "get_entity_neighbors": [
        {"node_id": "component:payments", "depth": 3},
        {"node_id": "decision:open", "depth": 3},
        {"node_id": "component:vault"},
    ],
    "find_path": [
        {"source": "component:checkout", "target": "component:hsm"},
        {"source": "decision:open", "target": "document:card-data"},
        {"source": "component:payments", "target": "decision:hidden"},
    ],
    "trace_decision_lineage": [
        {"decision_id": "decision:open", "direction": "both", "depth": 5},
        {"decision_id": "decision:hidden", "direction": "both"},
    ],
    "record_decision": [
        {"text": "use the vault", "references": ["component:vault"]},
        {"text": "again", "supersedes": ["decision:hidden"], "context_graph_ids": [CG]},
    ],
    "record_context_usage": [
        {"context_graph_id": CG, "tool_call_id": "t-1", "node_ids": ["component:vault"]},
    ],
    # The shop holds no directives: the error that says how to add rules names no node.
    "query_directives": [{"task": "vault secret card content", "paths": ["vault/keys.py"]}],
}

# Tools that return no node names or content, and why.
NO_GRAPH_CONTENT = {
    # Both read Markdown files of the project, not the graph: what they return is the files'
    # own paths, counts and lint messages.
    "ingest_markdown",
    "lint_graph",
    # The task's layer, topics and technologies: from the task, paths, diff and manifests only.
    "detect_context",
}


async def test_every_tool_is_either_checked_for_leaks_or_declared_free_of_graph_content() -> None:
    listed = {t.name for t in await create_server().list_tools()}
    assert set(READS_THE_GRAPH) | NO_GRAPH_CONTENT == listed == TOOLS


def _args(args: dict[str, Any], graph_id: str) -> dict[str, Any]:
    return json.loads(json.dumps(args).replace(CG, graph_id))


def _everything(result: CallToolResult) -> str:
    return text_of(result) + json.dumps(result.structured_content or {})


@pytest.mark.parametrize(
    ("tool", "args"),
    [(tool, args) for tool, calls in READS_THE_GRAPH.items() for args in calls],
    ids=lambda v: v if isinstance(v, str) else json.dumps(v),
)
async def test_no_tool_returns_what_a_policy_withholds(
    shop: Runtime, tool: str, args: dict[str, Any]
) -> None:
    from tests.shop import decide_over_shop

    graph_id = await decide_over_shop(shop)
    async with Client(create_server(shop), client_info=CLIENT) as c:
        result = await c.call_tool(tool, _args(args, graph_id))
    returned = _everything(result)
    for secret in SECRETS:
        assert secret not in returned, f"{tool}({args}) returned {secret}:\n{returned}"


async def test_what_the_walk_reaches_is_there_in_its_allowed_form(
    decided_shop: Runtime,
) -> None:
    """The walk above reaches real content: the open decision's lineage shows the redacted
    card document as id and type only, and leaves the denied decision that superseded it out
    (counted)."""
    async with Client(create_server(decided_shop), client_info=CLIENT) as c:
        traced = await c.call_tool(
            "trace_decision_lineage",
            {"decision_id": "decision:open", "direction": "both", "depth": 5},
        )
        hidden = await c.call_tool("trace_decision_lineage", {"decision_id": "decision:hidden"})
        near = await c.call_tool("get_entity_neighbors", {"node_id": "decision:open"})
        later = await c.call_tool(
            "record_decision", {"text": "Rotate yearly", "supersedes": ["decision:hidden"]}
        )
        assert later.structured_content is not None
        above = await c.call_tool(
            "trace_decision_lineage",
            {"decision_id": later.structured_content["decision_id"], "depth": 3},
        )
    lineage = traced.structured_content
    assert lineage is not None and not traced.is_error
    steps = {s["id"]: s for s in lineage["steps"]}
    assert steps["decision:open"]["label"] == "Charge cards through the gateway"
    assert steps["document:card-data"]["label"] == "[redacted]"
    assert "decision:hidden" not in steps and lineage["excluded_by_policy"] >= 1
    assert hidden.is_error and "denied by policy" in text_of(hidden)
    neighbours = near.structured_content
    assert neighbours is not None and neighbours["excluded_by_policy"] == 1
    assert "decision:hidden" not in {n["node_id"] for n in neighbours["neighbors"]}
    # A visible decision superseding the denied one names nothing of it, not even its id.
    assert not above.is_error and "decision:hidden" not in _everything(above)
