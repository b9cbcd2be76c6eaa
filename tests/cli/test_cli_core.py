"""The ``kg`` command as a user runs it: a real subprocess against a real database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kg.config import Scope
from kg.db.revision import head_revision
from kg.events import EventStore, NodeAsserted
from tests.support import cli_env, kg


@pytest.fixture
def env(db_url: str) -> dict[str, str]:
    return cli_env(db_url)


async def test_status_reports_database_revision_count_and_position(
    env: dict[str, str], tmp_path: Path, store: EventStore, scope: Scope
) -> None:
    await store.append(scope, "s", [NodeAsserted(node_id="file:a", node_type="File", name="a")] * 3)
    out = kg("status", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "external PostgreSQL" in out.stdout
    assert f"schema:        {head_revision()} (head)" in out.stdout
    assert "3 in this project" in out.stdout
    assert "last position: 3" in out.stdout


async def test_audit_verify_says_ok_then_names_the_tampered_position(
    env: dict[str, str], tmp_path: Path, store: EventStore, scope: Scope, system_pool: object
) -> None:
    await store.append(
        scope,
        "s",
        [NodeAsserted(node_id=f"file:{i}", node_type="File", name="f") for i in range(5)],
    )
    ok = kg("audit", "verify", env=env, cwd=tmp_path)
    assert ok.returncode == 0 and "ok, 5 events" in ok.stdout

    async with system_pool.acquire() as conn, conn.transaction():  # type: ignore[attr-defined]
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(
            'UPDATE kg_events SET payload = payload || \'{"name": "x"}\' WHERE position = 3'
        )
    broken = kg("audit", "verify", env=env, cwd=tmp_path)
    assert broken.returncode == 1
    assert "position 3" in broken.stderr


def test_unreachable_database_names_the_url_without_password(tmp_path: Path) -> None:
    env = {**os.environ, "KG_DATABASE_URL": "postgresql://bob:s3cret@127.0.0.1:1/nowhere"}
    out = kg("status", env=env, cwd=tmp_path)
    assert out.returncode == 1
    assert "postgresql://bob:***@127.0.0.1:1/nowhere" in out.stderr
    assert "s3cret" not in out.stderr + out.stdout
    assert "Traceback" not in out.stderr


def test_status_on_an_unmigrated_database_says_to_upgrade(
    empty_db_url: str, tmp_path: Path
) -> None:
    out = kg("status", env={**os.environ, "KG_DATABASE_URL": empty_db_url}, cwd=tmp_path)
    assert out.returncode == 1
    assert "kg db upgrade" in out.stderr


def test_demo_runs_on_the_embedded_database_and_is_idempotent(project_dir: Path) -> None:
    tmp_path = project_dir
    env = {k: v for k, v in os.environ.items() if k != "KG_DATABASE_URL"}
    env["KG_EMBEDDER"] = "hashing"
    (tmp_path / ".git").mkdir()  # makes tmp_path the project root
    first = kg("demo", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "embedded PostgreSQL in" in first.stdout and str(tmp_path / ".kg") in first.stdout
    assert "- **component:checkout** (anchor)" in first.stdout
    assert "Card vault" not in first.stdout, "the secret document is denied by policy"
    assert "audit context: MATCH" in first.stdout
    assert "audit verify: ok, 16 events" in first.stdout, "15 demo events + the logged build"
    rules = first.stdout.split("kg rules query")[1]
    assert "### MUST" in rules and "\n.cursor/rules/migrations.mdc:\n- L" in rules
    # The API example: an entity chain extracted from prose, found by name.
    chain = first.stdout.split("entity chain from the name 'Subscription'")[1]
    assert "GENERATES → apiobject:invoice (APIObject) Invoice" in chain
    assert "GENERATES → apiobject:charge (APIObject) Charge" in chain
    assert "TRIGGERS → event:charge.succeeded (Event) charge.succeeded" in chain

    second = kg("demo", env=env, cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "already present" in second.stdout, "the same data folder is reused"
    assert "audit verify: ok, 17 events" in second.stdout, "only the new build was appended"
    assert not (tmp_path / ".kg" / "pgdata" / "postmaster.pid").exists(), "server stopped on exit"


async def test_decision_and_lineage_commands(
    env: dict[str, str], tmp_path: Path, shop: object
) -> None:
    build = kg(
        "context", "build", "-a", "component:checkout", "--max-depth", "1", env=env, cwd=tmp_path
    )
    assert build.returncode == 0, build.stderr
    graph_id = build.stdout.split("context_graph_id ")[1].split(";")[0]
    rec = kg(
        "decision",
        "record",
        "Retry twice",
        "-g",
        graph_id,
        "--ref",
        "adr:0007",
        env=env,
        cwd=tmp_path,
    )
    assert rec.returncode == 0, rec.stderr
    node_id = rec.stdout.split("recorded ")[1].split(" ")[0]
    out = kg("lineage", node_id, "--json", env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert f"context_graph:{graph_id}" in out.stdout and '"CONTAINED"' in out.stdout
    bad = kg("decision", "record", "x", "--ref", "adr:9999", env=env, cwd=tmp_path)
    assert bad.returncode == 1 and "adr:9999 not found" in bad.stderr


def _init_importing(env: dict[str, str], cwd: Path) -> tuple[str, set[str]]:
    """``kg init``'s output and the modules it imported (``python -X importtime``)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "kg.cli", "init"],
        env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done.stdout, imported


def test_init_on_a_database_already_at_head_runs_no_alembic(
    empty_db_url: str, tmp_path: Path
) -> None:
    """A new database is migrated by Alembic; `kg init` (or `kg db upgrade`) again finds it at
    head with one query and neither imports nor runs Alembic (~1 s of every re-init)."""
    env = {**os.environ, "KG_DATABASE_URL": empty_db_url, "KG_PROJECT_ROOT": str(tmp_path)}
    first, imported = _init_importing(env, tmp_path)
    assert f"schema at {head_revision()}" in first
    assert "alembic" in imported
    again, imported = _init_importing(env, tmp_path)
    assert f"schema at {head_revision()}" in again
    assert again.split(",")[0] == first.split(",")[0], "the same database is named"
    assert not {m for m in imported if m.split(".")[0] in ("alembic", "sqlalchemy")}
    status = kg("status", env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert f"schema:        {head_revision()} (head)" in status.stdout
