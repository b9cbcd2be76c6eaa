"""``kg mcp --memory-compat``: the reference memory server's tools through the SDK's real
client, over stdio and streamable HTTP, with several clients writing at once."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.session import ClientSession
from mcp_types import Implementation

from kg.audit.verify import verify_tenant
from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import (
    TOOLS,
    call,
    error_text,
    http_server,
    http_session,
    ok,
    server_env,
    stdio_session,
)
from tests.mcp.test_tool_policies import governed

MEMORY_TOOLS = {
    "create_entities",
    "create_relations",
    "add_observations",
    "delete_entities",
    "delete_observations",
    "delete_relations",
    "read_graph",
    "search_nodes",
    "open_nodes",
}


async def reference_session_script(session: ClientSession) -> None:
    """What an agent configured for the reference server does, with its argument shapes."""
    tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS | MEMORY_TOOLS
    item = tools["create_entities"].input_schema["properties"]["entities"]["items"]
    assert set(item["properties"]) == {"name", "entityType", "observations"}
    assert tools["delete_entities"].input_schema["required"] == ["entityNames"]

    created = ok(
        await call(
            session,
            "create_entities",
            entities=[
                {"name": "Alice", "entityType": "person", "observations": ["likes tea"]},
                {"name": "Acme", "entityType": "organization", "observations": []},
            ],
        )
    )
    assert [e["name"] for e in created["entities"]] == ["Alice", "Acme"]
    assert isinstance(created["position"], int)
    related = ok(
        await call(
            session,
            "create_relations",
            relations=[{"from": "Alice", "to": "Acme", "relationType": "works at"}],
        )
    )
    assert related["relations"] == [{"from": "Alice", "to": "Acme", "relationType": "works at"}]
    assert related["position"] > created["position"]
    added = ok(
        await call(
            session,
            "add_observations",
            observations=[{"entityName": "Alice", "contents": ["speaks Dutch"]}],
        )
    )
    assert added["results"] == [{"entityName": "Alice", "addedObservations": ["speaks Dutch"]}]

    found = ok(await call(session, "search_nodes", query="dutch"))
    assert [e["name"] for e in found["entities"]] == ["Alice"]
    assert found["relations"] == [{"from": "Alice", "to": "Acme", "relationType": "works at"}]
    opened = ok(await call(session, "open_nodes", names=["Acme"]))
    assert opened["entities"] == [
        {"name": "Acme", "entityType": "organization", "observations": []}
    ]

    missing = error_text(
        await call(
            session, "add_observations", observations=[{"entityName": "Bob", "contents": ["x"]}]
        )
    )
    assert "entity Bob not found" in missing and "create_entities" in missing

    for tool, args in (
        (
            "delete_observations",
            {"deletions": [{"entityName": "Alice", "observations": ["likes tea"]}]},
        ),
        (
            "delete_relations",
            {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works at"}]},
        ),
        ("delete_entities", {"entityNames": ["Acme"]}),
    ):
        done = ok(await call(session, tool, **args))
        assert done["success"] is True and isinstance(done["position"], int), tool
    graph = ok(await call(session, "read_graph"))
    assert graph["entities"] == [
        {"name": "Alice", "entityType": "person", "observations": ["speaks Dutch"]}
    ]
    assert graph["relations"] == [] and graph["truncated"]["entities"] == 0


async def test_the_reference_tools_over_stdio(
    runtime: Runtime, db_url: str, tmp_path: Path
) -> None:
    env = server_env(db_url)
    async with stdio_session(env, tmp_path, "--memory-compat") as session:
        await reference_session_script(session)


async def test_the_reference_tools_over_http(runtime: Runtime, db_url: str, tmp_path: Path) -> None:
    async with (
        http_server(server_env(db_url), tmp_path, "--memory-compat") as url,
        http_session(url) as session,
    ):
        await reference_session_script(session)


async def test_several_clients_writing_at_once_lose_nothing(
    runtime: Runtime, db_url: str, tmp_path: Path
) -> None:
    """Two stdio servers (two processes, as two agents each starting their own) and an HTTP
    server with three sessions, all adding observations to one entity at once."""
    env = server_env(db_url)
    per_client = 8
    async with (
        http_server(env, tmp_path, "--memory-compat") as url,
        stdio_session(env, tmp_path, "--memory-compat") as first,
    ):
        ok(
            await call(
                first, "create_entities", entities=[{"name": "Shared", "entityType": "note"}]
            )
        )

        async def writer(session: ClientSession, who: str) -> None:
            for i in range(per_client):
                result = ok(
                    await call(
                        session,
                        "add_observations",
                        observations=[{"entityName": "Shared", "contents": [f"{who}-{i}"]}],
                    )
                )
                assert result["results"][0]["addedObservations"] == [f"{who}-{i}"]

        async with (
            stdio_session(env, tmp_path, "--memory-compat") as second,
            http_session(url) as h1,
            http_session(url) as h2,
            http_session(url) as h3,
            anyio.create_task_group() as tg,
        ):
            clients: dict[str, Any] = {"s1": first, "s2": second, "h1": h1, "h2": h2, "h3": h3}
            for who, session in clients.items():
                tg.start_soon(writer, session, who)
        graph = ok(await call(first, "open_nodes", names=["Shared"]))
    expected = {f"{who}-{i}" for who in ("s1", "s2", "h1", "h2", "h3") for i in range(per_client)}
    assert set(graph["entities"][0]["observations"]) == expected
    report = await verify_tenant(runtime.system_pool, runtime.scope.tenant_id)
    assert report.ok, str(report)
    verified = await anyio.run_process(
        [sys.executable, "-m", "kg.cli", "audit", "verify"], env=env, cwd=tmp_path, check=False
    )
    assert verified.returncode == 0, (verified.stdout + verified.stderr).decode()


async def test_memory_tools_are_actions_policies_gate(shop: Runtime) -> None:
    """Under ``default: deny-writes``, every client may read memory; only a trusted one
    writes it (the refusal names the policy and is logged)."""
    await governed(shop)
    entities = [{"name": "Alice", "entityType": "person", "observations": ["likes tea"]}]
    server = create_server(shop, memory_compat=True)
    async with Client(server, client_info=Implementation(name="untrusted", version="1")) as c:
        refused = error_text(await c.call_tool("create_entities", {"entities": entities}))
        assert "mcp:untrusted may not run create_entities" in refused
        assert "policy:default" in refused
        assert ok(await c.call_tool("read_graph", {}))["entities"] == []
    async with Client(server, client_info=Implementation(name="trusted-1", version="1")) as c:
        assert ok(await c.call_tool("create_entities", {"entities": entities}))["position"]
    async with Client(server, client_info=Implementation(name="untrusted", version="1")) as c:
        found = ok(await c.call_tool("search_nodes", {"query": "tea"}))
        assert [e["name"] for e in found["entities"]] == ["Alice"]
