"""What the audit says after an erasure: a context graph built from erased content can no
longer be re-derived in full (and says why, with the receipt); the CLI erases and checks."""

from __future__ import annotations

import json
from pathlib import Path

from kg.config import Scope
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.erasure import Selection, erase
from kg.events import NodeAsserted
from kg.runtime import Runtime
from tests.support import cli_env, kg


async def test_a_graph_built_from_erased_content_says_it_cannot_be_re_derived_in_full(
    shop: Runtime, scope: Scope
) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    before = await reproduce_context_graph(shop, graph.context_graph_id)
    assert before.matches and before.erased == ()
    node = "component:payments"
    assert node in {n.node_id for n in graph.nodes}

    result = await erase(shop, Selection("node", node), reason="contract ended", authority="L-1")
    after = await reproduce_context_graph(shop, graph.context_graph_id)
    erased_positions = [e.position for e in result.plan.events]
    assert [p for p, _ in after.erased] == [
        p for p in erased_positions if p <= graph.as_of_position
    ]
    assert {r for _, r in after.erased} == {result.position}
    assert "can no longer be re-derived in full" in str(after)


async def test_cli_dry_run_erase_and_check_receipt(
    runtime: Runtime, scope: Scope, db_url: str, tmp_path: Path
) -> None:
    secret_text = "customer Jane Roe, phone 555-0142"
    await runtime.store.append(
        scope,
        "crm",
        [NodeAsserted(node_id="user:jane", node_type="User", name="Jane", content=secret_text)],
    )
    await runtime.catch_up()
    env = cli_env(db_url)

    dry = kg("erase", "--node", "user:jane", "--dry-run", env=env, cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert "event 1 NodeAsserted crm: erase content" in dry.stdout
    assert "row public.kg_nodes user:jane" in dry.stdout
    assert secret_text not in dry.stdout + dry.stderr

    refused = kg("erase", "--node", "user:jane", env=env, cwd=tmp_path)
    assert refused.returncode == 1 and "needs --reason and --authority" in refused.stderr

    receipt_file = tmp_path / "receipt.json"
    done = kg(
        "erase", "--node", "user:jane", "--reason", "GDPR request", "--authority", "DPO-7",
        "-o", str(receipt_file), env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    receipt = json.loads(receipt_file.read_text())
    assert receipt["erased"][0]["position"] == 1 and receipt["authority"] == "DPO-7"
    assert secret_text not in receipt_file.read_text()

    checked = kg("erase", "--check", str(receipt_file), env=env, cwd=tmp_path)
    assert checked.returncode == 0 and "receipt checks, unsigned" in checked.stdout
    assert "log: ok, 2 events" in checked.stdout
    verify = kg("audit", "verify", env=env, cwd=tmp_path)
    assert verify.returncode == 0 and "1 erased by receipt(s) at position(s) 2" in verify.stdout


async def test_lineage_keeps_an_erased_decision_as_a_step_marked_erased(
    shop: Runtime, scope: Scope
) -> None:
    from kg.events import DecisionRecorded
    from kg.lineage import trace_decision_lineage

    await shop.store.append(
        scope,
        "decision:77",
        [
            DecisionRecorded(
                decision_id="77",
                text="refund Jane Roe's order",
                informed_by=("component:payments",),
            )
        ],
    )
    await erase(shop, Selection("node", "decision:77"), reason="GDPR", authority="DPO-9")
    lineage = await trace_decision_lineage(shop, "77", "upstream")
    step = lineage.steps["decision:77"]
    assert step.details["erased"] is True and step.position is not None
    assert "Jane" not in str(lineage.to_dict())


async def test_erasure_refuses_content_that_was_edited_behind_the_logs_back(
    runtime: Runtime, scope: Scope, db_url: str, tmp_path: Path
) -> None:
    """Issue 30 A4: a superuser edits a decision's stored content; `kg audit verify` reports
    it. `kg erase` (and its dry run) must say so and refuse, not erase the evidence and issue
    a receipt after which verify says the log is fine."""
    from kg.events import DecisionRecorded

    await runtime.store.append(
        scope, "decision:7", [DecisionRecorded(decision_id="7", text="ship", rationale="Jane")]
    )
    await runtime.catch_up()
    await runtime.system_pool.execute("ALTER TABLE kg_event_content DISABLE TRIGGER USER")
    await runtime.system_pool.execute(
        "UPDATE kg_event_content SET body = replace(body, 'Jane', 'Bob')"
    )
    await runtime.system_pool.execute("ALTER TABLE kg_event_content ENABLE TRIGGER USER")
    env = cli_env(db_url)
    before = kg("audit", "verify", env=env, cwd=tmp_path)
    assert before.returncode != 0 and "content was edited" in before.stdout + before.stderr

    dry = kg("erase", "--node", "decision:7", "--dry-run", env=env, cwd=tmp_path)
    assert "event 1: its content does NOT match the digest" in dry.stdout, dry.stdout
    assert "the erasure will be refused" in dry.stdout

    refused = kg(
        "erase", "--node", "decision:7", "--reason", "GDPR", "--authority", "DPO-1",
        "-o", str(tmp_path / "receipt.json"), env=env, cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "does not match the digest" in refused.stderr and "position(s) 1" in refused.stderr
    assert not (tmp_path / "receipt.json").exists(), "no receipt for a refused erasure"
    kept = await runtime.system_pool.fetchval("SELECT count(*) FROM kg_event_content")
    assert kept == 1, "the edited content (the evidence) is still there"
    events = await runtime.system_pool.fetchval(
        "SELECT count(*) FROM kg_events WHERE event_type = 'ContentErased'"
    )
    assert events == 0
    after = kg("audit", "verify", env=env, cwd=tmp_path)
    assert after.returncode != 0 and "content was edited" in after.stdout + after.stderr
