"""Signed checkpoints catch a rewritten history that the hash chain no longer can; inclusion
proofs of a decision's events check offline; bad evidence is a clear error, never a traceback.
Through the real ``kg`` command, on the real database."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from kg.audit.verify import recompute_hash
from kg.config import Scope
from kg.context.service import build_context_graph, parse_request, record_context_usage
from kg.decisions import record_decision
from kg.events import EventStore, NodeAsserted
from kg.events.store import SELECT_EVENT, record_from_row
from kg.runtime import Runtime
from tests.support import cli_env as _cli_env
from tests.support import kg

# The subprocesses import this checkout's kg (the virtualenv may hold another checkout's).
ROOT = str(Path(__file__).resolve().parents[2])


def cli_env(db_url: str, **extra: str) -> dict[str, str]:
    return _cli_env(db_url, PYTHONPATH=ROOT, **extra)


def events(n: int, tag: str) -> list[NodeAsserted]:
    return [
        NodeAsserted(node_id=f"document:{tag}{i}.md", node_type="Document", name=f"{tag}{i}")
        for i in range(n)
    ]


async def rewrite_history(system_pool: asyncpg.Pool, tenant: str, position: int) -> None:
    """What a superuser can do: edit an event, recompute every later hash, the chain head and
    the Merkle tree, so that the database is consistent with itself again."""
    async with system_pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(
            "UPDATE kg_events SET payload = jsonb_set(payload, '{name}', '\"forged\"') "
            "WHERE position = $1",
            position,
        )
        rows = await conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND position >= $2 "
            "ORDER BY position",
            tenant,
            position,
        )
        prev = None
        for row in rows:
            event = record_from_row(row)
            if prev is not None:
                event = dataclasses.replace(event, prev_hash=prev)
            prev = recompute_hash(event)
            await conn.execute(
                "UPDATE kg_events SET prev_hash = $1, hash = $2 WHERE position = $3",
                event.prev_hash,
                prev,
                event.position,
            )
        await conn.execute("UPDATE kg_chain_heads SET hash = $1 WHERE tenant_id = $2", prev, tenant)
        await conn.execute("SELECT kg_merkle_rebuild($1)", tenant)


@pytest.fixture
async def log(store: EventStore, scope: Scope) -> list[int]:
    """40 events of acme in a few appends, interleaved with another tenant's."""
    positions = []
    for k, size in enumerate([7, 1, 13, 19]):
        result = await store.append(scope, f"s{k}", events(size, f"a{k}-"))
        positions += list(range(result.first_position, result.last_position + 1))
        await store.append(Scope("other", "webshop"), f"s{k}", events(2, f"o{k}-"))
    return positions


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def refused(result: subprocess.CompletedProcess[str], *words: str, error: bool = True) -> str:
    text = result.stdout + result.stderr
    assert result.returncode == 1, text
    assert "Traceback" not in text and ("error:" in text) == error, text
    for word in words:
        assert word in text, text
    return text


async def test_a_checkpoint_catches_a_rewrite_the_chain_no_longer_shows(
    log: list[int], store: EventStore, scope: Scope, system_pool: asyncpg.Pool,
    db_url: str, tmp_path: Path,
) -> None:  # fmt: skip
    env = cli_env(db_url, GIT_AUTHOR_NAME="r", GIT_AUTHOR_EMAIL="r@example.org",
                  GIT_COMMITTER_NAME="r", GIT_COMMITTER_EMAIL="r@example.org")  # fmt: skip
    git("init", "-q", str(tmp_path / "witness"))
    ok(kg("audit", "keygen", "-o", str(tmp_path / "key"), env=env, cwd=tmp_path))
    assert (tmp_path / "key.pub").read_text().startswith("kg-audit+")
    held = tmp_path / "cp.json"
    out = ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(held),
                "--witness", str(tmp_path / "witness"), env=env, cwd=tmp_path))  # fmt: skip
    assert "40 events" in out
    witnessed = tmp_path / "witness" / "checkpoint-000000000040.json"
    assert json.loads(witnessed.read_text()) == json.loads(held.read_text())
    assert (tmp_path / "witness" / "leaves").stat().st_size == 40 * 32
    assert "kg checkpoint 40" in git("-C", str(tmp_path / "witness"), "log", "--oneline")

    await store.append(scope, "later", events(9, "later"))
    out = ok(kg("audit", "verify", "--checkpoint", str(held), "--trusted-key",
                str(tmp_path / "key.pub"), env=env, cwd=tmp_path))  # fmt: skip
    assert "ok, " in out and "tenant acme, 40 events" in out and "extends it" in out

    tampered = log[22]  # acme's 23rd event
    await rewrite_history(system_pool, "acme", tampered)
    plain = ok(kg("audit", "verify", env=env, cwd=tmp_path))
    assert "ok, 49 events" in plain, "the chain and the tree were recomputed: they verify"

    text = refused(kg("audit", "verify", "--checkpoint", str(witnessed), env=env, cwd=tmp_path),
                   "FAILS", error=False)  # fmt: skip
    assert f"first event that differs from the checkpoint is at position {tampered}" in text
    # Without the witness's copy of the leaves, the checkpoint's border still narrows it down.
    text = refused(kg("audit", "verify", "--checkpoint", str(held), env=env, cwd=tmp_path),
                   "FAILS", error=False)  # fmt: skip
    assert "rewritten" in text and f"from {log[0]} to {log[31]}" in text
    # and the witness refuses to extend its copy over the rewritten log
    refused(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "--witness",
               str(tmp_path / "witness"), env=env, cwd=tmp_path), "rewritten")  # fmt: skip


async def test_bad_checkpoints_are_clear_errors(
    log: list[int], db_url: str, tmp_path: Path
) -> None:
    env = cli_env(db_url)
    ok(kg("audit", "keygen", "-o", str(tmp_path / "key"), env=env, cwd=tmp_path))
    ok(kg("audit", "keygen", "-o", str(tmp_path / "other.key"), env=env, cwd=tmp_path))
    good = tmp_path / "cp.json"
    ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(good), env=env,
          cwd=tmp_path))  # fmt: skip
    data = json.loads(good.read_text())

    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps({**data, "note": data["note"].replace("\n40\n", "\n39\n")}))
    refused(kg("audit", "verify", "--checkpoint", str(forged), env=env, cwd=tmp_path),
            "signature does not match")  # fmt: skip

    truncated = tmp_path / "truncated.json"
    truncated.write_text(good.read_text()[:150])
    refused(kg("audit", "verify", "--checkpoint", str(truncated), env=env, cwd=tmp_path),
            "not valid JSON")  # fmt: skip
    refused(kg("audit", "verify", "--checkpoint", str(tmp_path / "none.json"), env=env,
               cwd=tmp_path), "does not exist")  # fmt: skip
    refused(kg("audit", "verify", "--checkpoint", str(good), "--trusted-key",
               str(tmp_path / "other.key.pub"), env=env, cwd=tmp_path),
            "not signed with the key you trust")  # fmt: skip
    # Issue 30 A6: any key's checkpoint passed silently without --trusted-key.
    anyone = kg("audit", "verify", "--checkpoint", str(good), env=env, cwd=tmp_path)
    assert anyone.returncode == 0, anyone.stderr
    assert "signed by the key 'kg-audit'" in anyone.stderr
    assert "which you have not said you trust" in anyone.stderr
    private = kg("audit", "verify", "--checkpoint", str(good), "--trusted-key",
                 str(tmp_path / "key"), env=env, cwd=tmp_path)  # fmt: skip
    refused(private, "is a private signing key")
    secret = (tmp_path / "key").read_text().strip().split("+", 4)[-1]
    assert secret[:8] not in private.stdout + private.stderr

    theirs = tmp_path / "other-tenant.json"
    ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(theirs),
          env=cli_env(db_url, KG_TENANT="other"), cwd=tmp_path))  # fmt: skip
    refused(kg("audit", "verify", "--checkpoint", str(theirs), env=env, cwd=tmp_path),
            "tenant 'other'")  # fmt: skip
    refused(kg("audit", "checkpoint", "--key", str(tmp_path / "nokey"), env=env, cwd=tmp_path),
            "does not exist")  # fmt: skip


async def test_a_decisions_events_are_proved_and_checked_offline(
    shop: Runtime, db_url: str, tmp_path: Path
) -> None:
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    await record_context_usage(shop, graph.context_graph_id, "call-1", "read", ["adr:0007"])
    decision = await record_decision(
        shop, text="Use the gateway", context_graph_ids=[graph.context_graph_id]
    )
    await shop.store.append(shop.scope, "later", events(3, "later"))
    env = cli_env(db_url)
    ok(kg("audit", "keygen", "-o", str(tmp_path / "key"), env=env, cwd=tmp_path))
    cp = tmp_path / "cp.json"
    ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(cp), env=env,
          cwd=tmp_path))  # fmt: skip
    proof_path = tmp_path / "proof.json"
    ok(kg("audit", "prove", decision.node_id, "--checkpoint", str(cp), "-o", str(proof_path),
          env=env, cwd=tmp_path))  # fmt: skip
    proof = json.loads(proof_path.read_text())
    types = sorted(e["event_type"] for e in proof["entries"])
    assert types == ["ContextGraphBuilt", "ContextGraphUsed", "DecisionRecorded"]
    assert all(len(e["path"]) <= 7 for e in proof["entries"])

    def check(*args: str) -> subprocess.CompletedProcess[str]:
        # No database settings: the checker needs none.
        return subprocess.run([sys.executable, "-m", "kg.audit.check_proof", *args],
                              capture_output=True, text=True, cwd=tmp_path, timeout=60,
                              env={"PYTHONPATH": ROOT, "PATH": "/usr/bin:/bin"})  # fmt: skip

    out = ok(check(str(proof_path), str(cp), "--key", str(tmp_path / "key.pub")))
    assert "all 3 events are in the log" in out

    one = proof["entries"][0]
    ok(kg("audit", "prove", one["event_id"], "--checkpoint", str(cp), "-o",
          str(tmp_path / "one.json"), env=env, cwd=tmp_path))  # fmt: skip
    ok(check(str(tmp_path / "one.json"), str(cp)))

    edited = tmp_path / "edited.json"
    entry = {**one, "canonical_event": one["canonical_event"].replace("acme", "acmf")}
    edited.write_text(json.dumps({**proof, "entries": [entry]}))
    refused(check(str(edited), str(cp)), "does not hash to its chain hash")
    wrong_path = tmp_path / "wrong-path.json"
    entry = {**one, "path": list(reversed(one["path"]))}
    wrong_path.write_text(json.dumps({**proof, "entries": [entry]}))
    refused(check(str(wrong_path), str(cp)), "root")
    another_log = tmp_path / "another-log.json"
    another_log.write_text(
        json.dumps({**proof, "origin": "kg/00000000-0000-0000-0000-000000000000/acme"})
    )
    refused(check(str(another_log), str(cp)), "another log")
    truncated = tmp_path / "truncated.json"
    truncated.write_text(proof_path.read_text()[:200])
    refused(check(str(truncated), str(cp)), "not valid JSON")
    refused(kg("audit", "prove", "decision:nope", env=env, cwd=tmp_path), "not found")

    # Issue 30 A6: a private key passed by mistake as --key is refused, none of it printed;
    # deeply nested JSON is an error, not a traceback; no --key says whose key signed it.
    private = (tmp_path / "key").read_text().strip()
    mistaken = check(str(proof_path), str(cp), "--key", str(tmp_path / "key"))
    refused(mistaken, "is a private signing key, not a verifier key")
    secret = private.split("+", 4)[-1]
    assert secret[:8] not in mistaken.stdout + mistaken.stderr, "no part of the key printed"
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 200_000 + "]" * 200_000)
    deep = check(str(nested), str(cp))
    refused(deep, "nested too deeply")
    assert "Traceback" not in deep.stderr
    untrusted = ok(check(str(proof_path), str(cp)))
    assert "all 3 events are in the log" in untrusted
    said = check(str(proof_path), str(cp)).stderr
    assert "signed by the key 'kg-audit'" in said and "not said you trust" in said


def test_the_offline_checker_imports_no_database_driver() -> None:
    code = (
        "import sys, kg.audit.check_proof; "
        "print([m for m in sys.modules if m.split('.')[0] in ('asyncpg', 'psycopg', 'sqlalchemy')])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": ROOT},
    )
    assert out.stdout.strip() == "[]"
