"""The reviewer's commands as a reviewer runs them: verify (chain and projections), replay into
a kept schema, read commands ``--as-of`` it, and the trail in each format."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import asyncpg
import pytest

from kg.audit.projections_check import verify_projections
from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EdgeAsserted, EventMetadata, NodeAsserted, NodeRetired, PendingEvent
from kg.runtime import Runtime
from tests.support import cli_env, kg


@pytest.fixture
def env(db_url: str) -> dict[str, str]:
    return cli_env(db_url)


async def tamper(pool: asyncpg.Pool, sql: str) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute("SET LOCAL session_replication_role = replica")
        await conn.execute(sql)


@pytest.fixture
async def graph(runtime: Runtime, scope: Scope) -> int:
    """Two nodes from a legacy row and an edge; later, one renamed and one retired."""
    legacy = EventMetadata(actor="kg backfill", source="org.db/error_solutions#7")
    first = await runtime.store.append(
        scope,
        "s",
        [
            PendingEvent(
                NodeAsserted(node_id="component:a", node_type="Component", name="Alpha"), legacy
            ),
            NodeAsserted(node_id="component:b", node_type="Component", name="Beta"),
            EdgeAsserted(edge_type="USES", from_node="component:a", to_node="component:b"),
        ],
    )
    await runtime.store.append(
        scope,
        "s",
        [
            NodeAsserted(node_id="component:a", node_type="Component", name="Alpha v2"),
            NodeRetired(node_id="component:b"),
        ],
    )
    await runtime.catch_up()
    return first.last_position


async def test_projections_match_a_replay_until_a_row_is_forged(
    runtime: Runtime, graph: int
) -> None:
    checks = await verify_projections(runtime.system_pool, runtime.url, HashingEmbedder())
    assert [c.table for c in checks] == [
        "kg_nodes",
        "kg_edges",
        "context_graphs",
        "context_graph_usage",
    ]
    assert all(c.ok and c.position == 5 for c in checks), [str(c) for c in checks]
    await runtime.system_pool.execute(
        "UPDATE kg_nodes SET name = 'forged' WHERE node_id = 'component:a'"
    )
    nodes = (await verify_projections(runtime.system_pool, runtime.url, HashingEmbedder()))[0]
    assert not nodes.ok and nodes.differing == ("acme/webshop/component:a",)
    assert "DIFFERS" in str(nodes) and "component:a" in str(nodes)
    leftover = await runtime.system_pool.fetchval(
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'kg_verify_%'"
    )
    assert leftover == 0


async def test_a_forged_provenance_is_found_by_verify(
    runtime: Runtime, scope: Scope, graph: int
) -> None:
    await tamper(
        runtime.system_pool,
        'UPDATE kg_events SET metadata = metadata || \'{"source": "org.db/decisions#1"}\' '
        "WHERE position = 1",
    )
    report = await verify_tenant(runtime.app_pool, scope.tenant_id)
    assert report.broken_position == 1 and "edited" in str(report)


async def test_verify_projections_from_the_cli(
    env: dict[str, str], tmp_path: Path, graph: int, system_pool: asyncpg.Pool
) -> None:
    ok = kg("audit", "verify", "--projections", env=env, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "ok, 5 events" in ok.stdout and "kg_edges: ok at position 5" in ok.stdout
    await system_pool.execute(
        "INSERT INTO kg_edges (tenant_id, project_id, edge_id, edge_type, from_node, to_node, "
        "properties, weight, created_at, updated_at, last_position) VALUES ('acme', 'webshop', "
        "'x|USES|y', 'USES', 'x', 'y', '{}', 1, now(), now(), 1)"
    )
    broken = kg("audit", "verify", "--projections", env=env, cwd=tmp_path)
    assert broken.returncode == 1
    assert "kg_edges: DIFFERS" in broken.stderr and "x|USES|y" in broken.stderr


async def test_replay_then_read_commands_as_of_it(
    env: dict[str, str], tmp_path: Path, graph: int
) -> None:
    made = kg("audit", "replay", "--until", str(graph), "--schema", "before", env=env, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "replayed 3 events into schema before: tenant acme as of position 3" in made.stdout

    status = kg("--as-of", "before", "status", env=env, cwd=tmp_path)
    assert status.returncode == 0, status.stderr
    assert "last position: 3" in status.stdout

    as_of_env = {**env, "KG_AS_OF_SCHEMA": "before"}
    verify = kg("audit", "verify", env=as_of_env, cwd=tmp_path)
    assert verify.returncode == 0 and "ok, 3 events" in verify.stdout
    assert "as of position 3" in verify.stderr

    query = kg("--as-of", "before", "query", "Beta", "--mode", "fulltext", env=env, cwd=tmp_path)
    assert query.returncode == 0, query.stderr
    assert "component:b" in query.stdout, "retired later, present as of position 3"
    live = kg("query", "Beta", "--mode", "fulltext", env=env, cwd=tmp_path)
    assert "component:b" not in live.stdout

    write = kg("--as-of", "before", "context", "build", "-a", "component:a", env=env, cwd=tmp_path)
    assert write.returncode == 1 and "read-only" in write.stderr
    assert "Traceback" not in write.stderr

    listed = kg("audit", "replay", "--list", env=env, cwd=tmp_path)
    assert "schema before: tenant acme as of position 3" in listed.stdout
    dropped = kg("audit", "replay", "--drop", "before", env=env, cwd=tmp_path)
    assert dropped.returncode == 0 and "dropped before" in dropped.stdout
    gone = kg("--as-of", "before", "status", env=env, cwd=tmp_path)
    assert gone.returncode == 1 and "no finished replay" in gone.stderr


async def test_trail_formats_from_the_cli(env: dict[str, str], tmp_path: Path, graph: int) -> None:
    out = {}
    for fmt in ("jsonl", "csv", "md"):
        result = kg(
            "audit", "trail", "--actor", "kg backfill", "--format", fmt, env=env, cwd=tmp_path
        )
        assert result.returncode == 0, result.stderr
        out[fmt] = result.stdout
    (record,) = [json.loads(line) for line in out["jsonl"].splitlines()]
    assert record["source"] == "org.db/error_solutions#7" and record["position"] == 1
    (row,) = csv.DictReader(io.StringIO(out["csv"]))
    assert row["source"] == "org.db/error_solutions#7" and row["actor"] == "kg backfill"
    md = out["md"].splitlines()
    assert md[0].startswith("| position |") and len(md) == 3
    assert "org.db/error_solutions#7" in md[2]

    written = tmp_path / "trail.csv"
    to_file = kg(
        "audit",
        "trail",
        "--since",
        "2000-01-01",
        "--format",
        "csv",
        "-o",
        str(written),
        env=env,
        cwd=tmp_path,
    )
    assert to_file.returncode == 0 and "5 events" in to_file.stderr
    assert len(list(csv.DictReader(written.open()))) == 5
    bad = kg("audit", "trail", "--format", "xml", "--actor", "x", env=env, cwd=tmp_path)
    assert bad.returncode == 1 and "jsonl, csv, md" in bad.stderr
