"""Log messages from the tools at the level the client chose (``logging/setLevel`` on
handshake-era sessions, the request's own level from 2026-07-28), and progress from
ingest_markdown, through the SDK's client."""

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


async def test_ingest_reports_progress_to_a_client_that_asks(
    runtime: Runtime, tmp_path: Path
) -> None:
    project(tmp_path)
    (tmp_path / "docs" / "b.md").write_text("# B\n", encoding="utf-8")
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(create_server(runtime), mode="legacy") as client:
        ok(
            await client.call_tool(
                "ingest_markdown", {"paths": ["docs"]}, progress_callback=on_progress
            )
        )
    assert seen == [(2, 2, "2 of 2 changed files written")]


async def test_a_context_builds_warnings_are_logged_too(shop: Runtime) -> None:
    heard: list[LoggingMessageNotificationParams] = []

    async def listen(params: LoggingMessageNotificationParams) -> None:
        heard.append(params)

    async with Client(create_server(shop), log_level="info", logging_callback=listen) as client:
        graph = ok(await client.call_tool("build_context_graph", {"task": "card payments"}))
    assert graph["warnings"], "the hashing embedder is a fallback, and says so"
    assert [(m.level, m.data) for m in heard] == [("warning", w) for w in graph["warnings"]]
