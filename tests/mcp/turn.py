"""The worked example of the README, as an agent would run it through any MCP transport."""

from __future__ import annotations

from typing import Any

from mcp.client.session import ClientSession

from tests.mcp.client import call, ok, text_of

DENIED_MARKERS = ("component:vault", "VAULT-SECRET", "component:hsm")


async def agent_turn(session: ClientSession) -> dict[str, Any]:
    """Build a context graph -> record its usage -> record a decision -> trace its lineage.
    Returns the four structured results; asserts what an agent relies on at each step."""
    built = await call(
        session,
        "build_context_graph",
        anchors=["component:checkout"],
        max_depth=4,
        session_id="s-42",
        task_id="T-7",
    )
    graph = ok(built)
    cg = graph["context_graph_id"]
    assert cg.startswith("cg_") and graph["mode"] == "anchor"
    node_ids = {n["node_id"] for n in graph["nodes"]}
    assert {"component:checkout", "component:payments", "adr:0007"} <= node_ids
    assert graph["governance"]["excluded_count"] == 1  # the vault, denied by policy
    text = text_of(built)
    assert graph["rendering"] in text and f"context_graph_id: {cg}" in text
    for marker in DENIED_MARKERS:
        assert marker not in text and marker not in str(graph)

    usage = ok(
        await call(
            session,
            "record_context_usage",
            context_graph_id=cg,
            tool_call_id="edit-1",
            usage_type="edit",
            node_ids=["component:payments", "adr:0007"],
            session_id="s-42",
        )
    )
    assert usage["duplicate"] is False and usage["position"] > 0

    decision = ok(
        await call(
            session,
            "record_decision",
            text="Retry gateway calls with idempotency keys",
            rationale="ADR-0007 routes card payments through the gateway",
            decision_type="architecture",
            confidence=0.8,
            context_graph_ids=[cg],
            references=["adr:0007"],
            session_id="s-42",
        )
    )
    assert set(decision["informed_by"]) == {"component:payments", "adr:0007"}
    assert decision["node_id"] == f"decision:{decision['decision_id']}"

    lineage = ok(
        await call(
            session,
            "trace_decision_lineage",
            decision_id=decision["decision_id"],
            direction="upstream",
            depth=3,
        )
    )
    steps = {s["id"]: s for s in lineage["steps"]}
    assert steps[decision["node_id"]]["actor"] == "mcp:pytest-agent"
    assert steps[f"context_graph:{cg}"]["actor"] == "mcp:pytest-agent"
    assert {"component:payments", "adr:0007"} <= set(steps)
    links = {(link["from_id"], link["to_id"], link["relation"]) for link in lineage["links"]}
    assert (decision["node_id"], f"context_graph:{cg}", "INFORMED_BY") in links
    assert (f"context_graph:{cg}", "adr:0007", "CONTAINED") in links
    return {"graph": graph, "usage": usage, "decision": decision, "lineage": lineage}
