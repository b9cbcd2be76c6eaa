"""The README's commands against the coordinator, as a user runs them: ingest of a spec folder,
context builds, search, a decision and its lineage, ``kg audit verify`` with the Merkle tree and
a signed checkpoint, an inclusion proof, erasure with a receipt; and a second tenant that sees
nothing of the first through any of them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kg.config import Scope
from kg.events import EventStore, NodeAsserted
from kg.runtime import Runtime
from tests.citus.conftest import cli_env
from tests.support import kg

pytestmark = pytest.mark.citus

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SECRET = "customer Jane Roe, phone 555-0142"


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stdout + result.stderr


def check_proof(
    proof: Path, checkpoint: Path, key: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """The reviewer's offline check (no database)."""
    return subprocess.run(
        [sys.executable, "-m", "kg.audit.check_proof", str(proof), str(checkpoint), "--key",
         str(key)],
        capture_output=True, text=True, cwd=proof.parent, timeout=60, env=env,
    )  # fmt: skip


async def test_the_readme_commands_on_the_cluster_and_a_second_tenant_sees_none_of_it(
    citus_url: str, citus_runtime: Runtime, citus_scope: Scope, tmp_path: Path
) -> None:
    project = tmp_path / "examples"
    shutil.copytree(EXAMPLES, project)
    env = cli_env(citus_url, citus_scope)

    out = ok(kg("ingest", ".", env=env, cwd=project))
    assert "ingested 21 files: 21 changed, 0 unchanged, 0 removed, 0 failed" in out
    out = ok(kg("inspect", "docs/epics/spec-ingestion.md", env=env, cwd=project))
    assert out.startswith("document:docs/epics/spec-ingestion.md (Epic) Spec ingestion")

    built = {}
    for mode, args in {
        "anchor": ["-a", "document:docs/epics/spec-ingestion.md"],
        "semantic": ["-t", "how are spec files ingested"],
        "policy_first": ["-a", "document:docs/epics/spec-ingestion.md"],
    }.items():
        result = json.loads(
            ok(kg("context", "build", "--mode", mode, *args, "--json", env=env, cwd=project))
        )
        assert result["nodes"], mode
        built[mode] = result["context_graph_id"]
    found = ok(kg("query", "spec ingestion", env=env, cwd=project))
    assert "spec-ingestion.md" in found

    decided = ok(kg("decision", "record", "Ingest specs on commit", "--context-graph",
                    built["anchor"], env=env, cwd=project))  # fmt: skip
    decision = re.search(r"decision:[\w-]+", decided)
    assert decision, decided
    lineage = ok(kg("lineage", decision.group(0), env=env, cwd=project))
    assert built["anchor"] in lineage and "spec-ingestion.md" in lineage

    # Erasure with a receipt: content kept beside the log is removed on its shard.
    await citus_runtime.store.append(
        citus_scope, "crm",
        [NodeAsserted(node_id="user:jane", node_type="User", name="Jane", content=SECRET)],
    )  # fmt: skip
    receipt = tmp_path / "receipt.json"
    ok(kg("erase", "--node", "user:jane", "--reason", "GDPR request", "--authority", "DPO-7",
          "-o", str(receipt), env=env, cwd=project))  # fmt: skip
    assert SECRET not in receipt.read_text()
    checked = ok(kg("erase", "--check", str(receipt), env=env, cwd=project))
    assert "receipt checks, unsigned" in checked
    held = await citus_runtime.system_pool.fetchval(
        "SELECT count(*) FROM kg_event_content WHERE tenant_id = $1 AND body LIKE $2",
        citus_scope.tenant_id, f"%{SECRET}%",
    )  # fmt: skip
    assert held == 0

    # The audit: the chain, the Merkle tree, a signed checkpoint, an inclusion proof.
    ok(kg("audit", "keygen", "-o", str(tmp_path / "key"), env=env, cwd=project))
    checkpoint = tmp_path / "cp.json"
    ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(checkpoint),
          env=env, cwd=project))  # fmt: skip
    head = await EventStore(citus_runtime.system_pool).last_position(
        tenant_id=citus_scope.tenant_id
    )
    verified = ok(kg("audit", "verify", "--checkpoint", str(checkpoint), "--trusted-key",
                     str(tmp_path / "key.pub"), env=env, cwd=project))  # fmt: skip
    assert f"ok, {head} events" in verified or f"{head} events" in verified
    assert "erased by receipt" in verified
    proof = tmp_path / "proof.json"
    ok(kg("audit", "prove", decision.group(0), "--checkpoint", str(checkpoint), "-o", str(proof),
          env=env, cwd=project))  # fmt: skip
    entries = json.loads(proof.read_text())["entries"]
    assert "DecisionRecorded" in {e["event_type"] for e in entries}
    offline = check_proof(proof, checkpoint, tmp_path / "key.pub", env)
    assert offline.returncode == 0 and "are in the log" in offline.stdout, offline.stderr

    # A second tenant, same database, same project name: sees none of it.
    other = cli_env(citus_url, Scope(f"{citus_scope.tenant_id}-other", citus_scope.project_id))
    status = ok(kg("status", env=other, cwd=project))
    assert "events:        0 in this project" in status
    nothing = kg("query", "spec ingestion", env=other, cwd=project)
    assert "spec-ingestion.md" not in nothing.stdout + nothing.stderr
    missing = kg("inspect", "docs/epics/spec-ingestion.md", env=other, cwd=project)
    assert missing.returncode == 1 and "Spec ingestion" not in missing.stdout
    hidden = kg("lineage", decision.group(0), env=other, cwd=project)
    assert hidden.returncode == 1 and built["anchor"] not in hidden.stdout
    empty = ok(kg("audit", "verify", env=other, cwd=project))
    assert "0 events" in empty
