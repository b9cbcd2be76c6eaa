"""A tenant's status and audit output say nothing about other tenants."""

from __future__ import annotations

from pathlib import Path

from kg.audit.projections_check import verify_projections
from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.runtime import Runtime
from tests.support import cli_env, kg


async def two_tenants(store: EventStore, mine: Scope) -> None:
    await store.append(mine, "s", [NodeAsserted(node_id="file:a", node_type="File", name="a")])
    other = Scope("globex", "secret-project")
    events = [NodeAsserted(node_id=f"file:g{i}", node_type="File", name="g") for i in range(7)]
    await store.append(other, "s", events)


async def test_status_counts_only_this_project(
    db_url: str, tmp_path: Path, store: EventStore, scope: Scope
) -> None:
    await two_tenants(store, scope)
    env = {**cli_env(db_url), "KG_TENANT": scope.tenant_id, "KG_PROJECT": scope.project_id}

    out = kg("status", env=env, cwd=tmp_path)

    assert out.returncode == 0, out.stderr
    assert "events:        1 in this project" in out.stdout
    assert "8" not in out.stdout.split("events:")[1].splitlines()[0]
    assert "last position: 1" in out.stdout


async def test_projection_check_of_one_tenant_ignores_and_never_names_another(
    runtime: Runtime, store: EventStore, scope: Scope
) -> None:
    await two_tenants(store, scope)
    await runtime.runner.catch_up()  # every tenant (a runtime's own catch-up is its tenant only)
    await runtime.system_pool.execute(
        "UPDATE kg_nodes SET name = 'forged' WHERE tenant_id = 'globex' AND node_id = 'file:g1'"
    )

    mine = await verify_projections(
        runtime.system_pool, runtime.url, HashingEmbedder(), scope.tenant_id
    )
    theirs = await verify_projections(runtime.system_pool, runtime.url, HashingEmbedder(), "globex")

    assert all(check.ok for check in mine), [str(c) for c in mine]
    assert not any("globex" in str(check) for check in mine)
    assert theirs[0].differing == ("globex/secret-project/file:g1",)


async def test_a_runtimes_catch_up_projects_its_own_tenant_only(
    runtime: Runtime, store: EventStore, scope: Scope
) -> None:
    await two_tenants(store, scope)
    await runtime.catch_up()  # a command never waits on another tenant's backlog
    rows = await runtime.system_pool.fetch("SELECT DISTINCT tenant_id FROM kg_nodes")
    assert {r["tenant_id"] for r in rows} == {scope.tenant_id}
