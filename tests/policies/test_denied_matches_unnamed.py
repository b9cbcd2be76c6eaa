"""A denied node is counted, never named, by a semantic or policy_first build (issue 30, A2).

The task text below matches the shop's denied vault and the denied decision best. The build's
match list (``semantic_anchors``) used to be the ranked matches before the policy check, so the
denied ids, with their scores, reached the CLI's ``--json``, the MCP tool's structured content
and the logged ``ContextGraphBuilt`` event. No field of any of them may carry a denied id;
the governance metadata counts them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.runtime import Runtime
from tests.mcp.client import server_env, stdio_session
from tests.support import cli_env, kg

DENIED = ("component:vault", "decision:hidden")
TASK = "VAULT-SECRET-NAME vault secret HIDDEN-DECISION rotate the vault keys"
MODES = ["semantic", "policy_first"]


def assert_unnamed(where: str, text: str) -> None:
    for node_id in DENIED:
        assert node_id not in text, f"{where} names the denied {node_id}:\n{text}"


async def logged_builds(rt: Runtime) -> list[str]:
    async with rt.system_pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT payload::text FROM kg_events WHERE event_type = 'ContextGraphBuilt' "
            "ORDER BY position"
        )
    return [r[0] for r in rows]


@pytest.mark.parametrize("mode", MODES)
async def test_the_cli_json_and_the_logged_event_name_no_denied_match(
    decided_shop: Runtime, db_url: str, tmp_path: Path, mode: str
) -> None:
    before = len(await logged_builds(decided_shop))
    for extra in ((), ("--json",)):
        out = kg("context", "build", "--task", TASK, "--mode", mode, *extra, env=cli_env(db_url),
                 cwd=tmp_path)  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert_unnamed(f"kg context build --mode {mode} {' '.join(extra)}", out.stdout + out.stderr)
    graph = json.loads(out.stdout)
    assert graph["semantic_anchors"], "the allowed matches are still listed"
    assert graph["governance"]["excluded_count"] >= 1, "the denied matches are counted"
    events = (await logged_builds(decided_shop))[before:]
    assert len(events) == 2
    for payload in events:
        assert_unnamed("the ContextGraphBuilt event", payload)
        assert json.loads(payload)["excluded_count"] >= 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_mcp_tool_names_no_denied_match(
    decided_shop: Runtime, db_url: str, tmp_path: Path, mode: str
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        result = await session.call_tool("build_context_graph", {"task": TASK, "mode": mode})
    assert not result.is_error, result.content
    structured = result.structured_content or {}
    assert structured["semantic_anchors"], "the allowed matches are still listed"
    assert structured["governance"]["excluded_count"] >= 1
    assert_unnamed("build_context_graph's structured content", json.dumps(structured))
    text = json.dumps([c.model_dump() for c in result.content])
    assert_unnamed("build_context_graph's text", text)
