"""Prompts, server instructions and embedded ``kg://`` resources, through real MCP clients."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import EmbeddedResource, ResourceLink, TextContent, TextResourceContents

from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import CLIENT, call, ok, server_env, stdio_session
from tests.mcp.test_directive_tools import rules_project
from tests.mcp.turn import DENIED_MARKERS, agent_turn

PROMPTS = {"rules_for_task", "context_for_task", "review_decision_lineage"}


def texts(messages: list[object]) -> str:
    out = []
    for m in messages:
        content = getattr(m, "content", None)
        if isinstance(content, TextContent):
            out.append(content.text)
        elif isinstance(content, EmbeddedResource):
            assert isinstance(content.resource, TextResourceContents)
            out.append(content.resource.text)
    return "\n".join(out)


async def test_instructions_say_when_to_call_the_rules_tools(runtime: Runtime) -> None:
    async with Client(create_server(runtime)) as client:
        instructions = client.instructions or ""
        for name in ("query_directives", "build_context_graph", "record_decision", *PROMPTS):
            assert name in instructions, name
        listed = (await client.list_prompts()).prompts
        assert {p.name for p in listed} == PROMPTS
        rules = next(p for p in listed if p.name == "rules_for_task")
        assert [(a.name, a.required) for a in rules.arguments or []] == [
            ("task", True),
            ("paths", False),
        ]


async def test_review_prompt_and_lineage_embed_the_decision_page(shop: Runtime) -> None:
    async with Client(create_server(shop), client_info=CLIENT) as client:
        turn = await agent_turn(client.session)
        decision = turn["decision"]
        uri = f"kg://decisions/{decision['decision_id']}"

        traced = await client.call_tool(
            "trace_decision_lineage", {"decision_id": decision["decision_id"]}
        )
        ok(traced)
        embedded = [c for c in traced.content if isinstance(c, EmbeddedResource)]
        assert len(embedded) == 1 and str(embedded[0].resource.uri) == uri
        assert isinstance(embedded[0].resource, TextResourceContents)
        assert "Retry gateway calls with idempotency keys" in embedded[0].resource.text

        prompt = await client.get_prompt(
            "review_decision_lineage", {"decision_id": decision["decision_id"]}
        )
        body = texts(list(prompt.messages))
        assert "compliance reviewer" in body
        assert f"{decision['node_id']} -INFORMED_BY-> context_graph:" in body
        assert "adr:0007" in body and "mcp:pytest-agent" in body
        assert "Retry gateway calls" in body  # the embedded kg:// page
        for marker in DENIED_MARKERS:
            assert marker not in body

        node = await client.call_tool("get_node", {"node_id": "adr:0007"})
        links = [c for c in node.content if isinstance(c, ResourceLink)]
        assert [str(link.uri) for link in links] == ["kg://nodes/adr%3A0007"]
        assert (await client.read_resource(links[0].uri)).contents

        with pytest.raises(MCPError) as missing:
            await client.get_prompt("review_decision_lineage", {"decision_id": "nope"})
        assert "decision:nope" in str(missing.value) and "not found" in str(missing.value)

        context = await client.get_prompt("context_for_task", {"task": "checkout payments"})
        body = texts(list(context.messages))
        cg = body.split("context_graph_id ")[1].split(";")[0]
        assert cg.startswith("cg_")
        # The prompt's build is logged like the tool's: a decision can name it.
        recorded = await client.call_tool(
            "record_decision", {"text": "Use it", "context_graph_ids": [cg]}
        )
        ok(recorded)


async def test_rules_prompt_over_stdio(db_url: str, tmp_path: Path) -> None:
    project = rules_project(tmp_path)
    env = {**server_env(db_url), "KG_PROJECT_ROOT": str(project)}
    async with stdio_session(env, project) as session:
        ok(await call(session, "ingest_markdown"))
        prompt = await session.get_prompt(
            "rules_for_task",
            {
                "task": "add a column to the events table",
                "paths": "migrations/versions/0013_add_column.py",
            },
        )
        body = texts(list(prompt.messages))
        assert "### MUST" in body and ".cursor/rules/migrations.mdc:" in body
        assert "served as " in body
