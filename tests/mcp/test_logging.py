"""Log messages from the tools at the level the client chose (``logging/setLevel`` on
handshake-era sessions, the request's own level from 2026-07-28), through the SDK's client."""

from __future__ import annotations

from pathlib import Path

from mcp import Client
from mcp_types import LoggingMessageNotificationParams

from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import ok


def project(root: Path) -> None:
    (root / "docs").mkdir()
    (root / "docs" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    (root / "docs" / "bad.md").write_bytes(b"# Bad \xff\n")


async def test_legacy_sessions_hear_nothing_until_they_set_a_level(
    runtime: Runtime, tmp_path: Path
) -> None:
    project(tmp_path)
    heard: list[LoggingMessageNotificationParams] = []

    async def listen(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    async with Client(create_server(runtime), mode="legacy", logging_callback=listen) as client:
        ok(await client.call_tool("ingest_markdown", {"paths": ["docs/a.md"]}))
        assert heard == [], "no level chosen: no messages"
        await client.set_logging_level("warning")
        await client.call_tool("ingest_markdown", {"paths": ["docs"], "force": True})
        assert [m.level for m in heard] == ["warning"]
        assert "docs/bad.md" in str(heard[0].data) and heard[0].logger == "kg"
        heard.clear()
        await client.set_logging_level("info")
        await client.call_tool("ingest_markdown", {"paths": ["docs/a.md"]})
        assert [m.level for m in heard] == ["info", "info"]
        assert str(heard[1].data).startswith("ingested 1 files")


async def test_modern_requests_carry_their_own_level(runtime: Runtime, tmp_path: Path) -> None:
    project(tmp_path)
    heard: list[LoggingMessageNotificationParams] = []

    async def listen(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    async with Client(create_server(runtime), log_level="info", logging_callback=listen) as client:
        ok(await client.call_tool("ingest_markdown", {"paths": ["docs/a.md"]}))
    assert [m.level for m in heard] == ["info", "info"]
