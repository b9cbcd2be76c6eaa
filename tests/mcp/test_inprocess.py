"""``create_server()`` on its own: the lifespan opens the Runtime from the environment, as an
application embedding the server would use it (the SDK's in-process client, no transport)."""

from __future__ import annotations

import asyncio

import pytest
from mcp import Client
from mcp_types import Implementation

from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import TOOLS, error_text, ok


async def test_the_lifespan_opens_the_runtime_from_the_environment(
    shop: Runtime, db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "KG_DATABASE_URL": db_url,
        "KG_TENANT": "acme",
        "KG_PROJECT": "webshop",
        "KG_EMBEDDER": "hashing",
    }.items():
        monkeypatch.setenv(name, value)
    info = Implementation(name="in-process", version="1")
    async with Client(create_server(), client_info=info) as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOLS
        graph = ok(await client.call_tool("build_context_graph", {"anchors": ["adr:0007"]}))
        assert graph["nodes"][0]["node_id"] == "adr:0007"
        too_deep = {"anchors": ["adr:0007"], "max_depth": 9}
        message = error_text(await client.call_tool("build_context_graph", too_deep))
        assert "field 'max_depth': Input should be less than or equal to 5" in message
        decision = ok(
            await client.call_tool(
                "record_decision",
                {"text": "Keep the gateway", "context_graph_ids": [graph["context_graph_id"]]},
            )
        )
    actor = await shop.system_pool.fetchval(
        "SELECT metadata->>'actor' FROM kg_events WHERE stream_id = $1", decision["node_id"]
    )
    assert actor == "mcp:in-process"


async def test_the_server_projects_what_a_call_appended_without_waiting_for_the_next_call(
    shop: Runtime,
) -> None:
    info = Implementation(name="in-process", version="1")
    async with Client(create_server(shop), client_info=info) as client:
        graph = ok(await client.call_tool("build_context_graph", {"anchors": ["adr:0007"]}))
        projected = None
        for _ in range(200):  # the tailing runner wakes on the append's NOTIFY
            projected = await shop.system_pool.fetchval(
                "SELECT mode FROM context_graphs WHERE context_graph_id = $1",
                graph["context_graph_id"],
            )
            if projected:
                break
            await asyncio.sleep(0.05)
    assert projected == "anchor"
