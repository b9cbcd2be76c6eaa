"""Policies gate the MCP tools: each tool is an action, the client is the actor
(``mcp:<client name>``), and a refused call is a tool error naming the policy, logged as an
``ActionRefused`` event. Through the SDK's own client, in process."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp_types import Implementation

from kg.audit.trail import TrailFilter, trail
from kg.events import EventMetadata
from kg.governance.sync import apply_policy_files
from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import error_text, ok

POLICIES = """\
default: deny-writes
policies:
  - id: trusted-agents
    name: Trusted agents may write
    effect: allow_actions
    scope: project
    actions: [write]
    actors: ["mcp:trusted-*"]
  - id: payments-team
    name: Only the payments agent reads payments
    effect: allow_actions
    nodes: [component:payments]
    actions: [read]
    actors: ["mcp:payments-*"]
"""

# Every write tool, with arguments that would succeed if allowed.
WRITES: dict[str, dict[str, Any]] = {
    "record_decision": {"text": "Keep the gateway", "references": ["adr:0007"]},
    "record_context_usage": {"context_graph_id": "CG", "tool_call_id": "t-1"},
    "ingest_markdown": {"paths": ["docs/a.md"]},
}


async def governed(shop: Runtime) -> Runtime:
    root = shop.settings.project_root
    (root / ".kg/policies").mkdir(parents=True)
    (root / ".kg/policies/agents.yaml").write_text(POLICIES, encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs/a.md").write_text("# A\n\nAbout the gateway.\n", encoding="utf-8")
    applied = await apply_policy_files(shop, EventMetadata(actor="kg sync"))
    assert applied.events == 3, applied
    return shop


async def calls(shop: Runtime, client_name: str) -> dict[str, Any]:
    """Each write tool called by a client of that name: the result or the error text."""
    info = Implementation(name=client_name, version="1")
    out: dict[str, Any] = {}
    async with Client(create_server(shop), client_info=info) as client:
        graph = ok(await client.call_tool("build_context_graph", {"anchors": ["adr:0007"]}))
        for tool, arguments in WRITES.items():
            if tool == "record_context_usage":
                arguments = {**arguments, "context_graph_id": graph["context_graph_id"]}
            result = await client.call_tool(tool, arguments)
            out[tool] = error_text(result) if result.is_error else ok(result)
    return out


async def refusals(shop: Runtime) -> list[tuple[str, str, list[str]]]:
    rows = await shop.system_pool.fetch(
        "SELECT payload FROM kg_events WHERE event_type = 'ActionRefused' ORDER BY position"
    )
    return [
        (r["payload"]["actor"], r["payload"]["action"], r["payload"]["policy_ids"]) for r in rows
    ]


async def test_every_write_tool_is_refused_to_a_client_no_policy_allows(shop: Runtime) -> None:
    await governed(shop)

    said = await calls(shop, "stranger")

    for tool, message in said.items():
        assert isinstance(message, str), f"{tool} ran for a client no policy allows"
        assert f"mcp:stranger may not run {tool}" in message
        assert "policy:default" in message and "logged" in message
    assert await refusals(shop) == [
        ("mcp:stranger", tool, ["policy:default", "policy:trusted-agents"]) for tool in WRITES
    ]
    decisions = await shop.system_pool.fetchval(
        "SELECT count(*) FROM kg_events WHERE event_type = 'DecisionRecorded'"
    )
    assert decisions == 0, "a refused call writes nothing but its refusal"
    # A reviewer's trail of the actor shows the attempts.
    said_in_trail = [
        (e.what, e.why)
        async for e in trail(shop.app_pool, shop.scope, TrailFilter(actor="mcp:stranger"))
    ]
    assert said_in_trail[1] == (
        "action refused: mcp:stranger may not record_decision",
        "by policy:default, policy:trusted-agents",
    )


async def test_every_write_tool_runs_for_a_client_a_policy_allows(shop: Runtime) -> None:
    await governed(shop)

    said = await calls(shop, "trusted-claude")

    assert said["record_decision"]["node_id"].startswith("decision:")
    assert said["record_context_usage"]["duplicate"] is False
    assert said["ingest_markdown"]["changed"] == ["docs/a.md"]
    assert await refusals(shop) == []


async def test_a_node_governed_by_a_gating_policy_is_read_only_by_its_actors(
    shop: Runtime,
) -> None:
    await governed(shop)
    node = {"node_id": "component:payments"}

    async with Client(
        create_server(shop), client_info=Implementation(name="payments-bot", version="1")
    ) as insider:
        assert ok(await insider.call_tool("get_node", node))["name"] == "Payments"
    async with Client(
        create_server(shop), client_info=Implementation(name="trusted-claude", version="1")
    ) as outsider:
        message = error_text(await outsider.call_tool("get_node", node))
        assert "mcp:trusted-claude may not run get_node on 1 of the nodes involved" in message
        assert "policy:payments-team" in message
        # Reads naming other nodes, or none, stay open.
        assert ok(await outsider.call_tool("get_node", {"node_id": "adr:0007"}))
        assert ok(await outsider.call_tool("query_knowledge_graph", {"text": "payments"}))
    assert await refusals(shop) == [("mcp:trusted-claude", "get_node", ["policy:payments-team"])]


async def test_without_gating_policies_every_client_may_write(shop: Runtime) -> None:
    said = await calls(shop, "anyone")

    assert said["record_decision"]["node_id"].startswith("decision:")
    assert await refusals(shop) == []
