"""The policy commands as a developer runs them: policy files applied by ``kg ingest``,
``kg policy list|explain|test``, a refused command, and the exploration commands ``kg path``
and ``kg nodes``. Real ``kg`` subprocesses on the test database."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from tests.support import cli_env, kg

POLICIES = """\
default: deny-writes
policies:
  - id: legal
    name: No agent reads legal
    effect: deny
    paths: ["docs/legal/**"]
  - id: team-writes
    effect: allow_actions
    scope: project
    actions: [write]
    actors: ["cli:ada"]
"""


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def test_policy_files_explained_tested_and_enforced_at_the_command_line(
    db_url: str, tmp_path: Path, system_pool: asyncpg.Pool
) -> None:
    env = cli_env(db_url, KG_ACTOR="cli:ada")
    write(tmp_path, ".kg/policies/governance.yaml", POLICIES)
    write(tmp_path, "docs/legal/nda.md", "# NDA\n\nSecret terms.\n")
    write(tmp_path, "docs/prd.md", "# PRD\n\nSee [the NDA](legal/nda.md).\n")

    done = kg("ingest", "docs", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1 policy file(s): 3 defined, 0 changed, 0 retired" in done.stdout

    listed = kg("policy", "list", env=env, cwd=tmp_path)
    assert "policy:legal [deny] No agent reads legal" in listed.stdout
    assert "paths=docs/legal/**" in listed.stdout
    assert "from .kg/policies/governance.yaml, since position" in listed.stdout

    since = await system_pool.fetchval(
        "SELECT position FROM kg_events WHERE stream_id = 'policy:legal'"
    )
    explained = kg("policy", "explain", "docs/legal/nda.md#nda", env=env, cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert "section:docs/legal/nda.md#nda (Section): denied" in explained.stdout
    assert (
        f"policy:legal [deny] via path docs/legal/**; since position {since}, from "
        ".kg/policies/governance.yaml" in explained.stdout
    )
    assert "Secret terms" not in explained.stdout

    # A draft change, previewed: nothing is written.
    events = await system_pool.fetchval("SELECT count(*) FROM kg_events")
    write(
        tmp_path, ".kg/policies/governance.yaml", POLICIES.replace("effect: deny", "effect: redact")
    )
    preview = kg("policy", "test", env=env, cwd=tmp_path)
    assert preview.returncode == 0, preview.stderr
    assert "policies changed (1):\n  policy:legal" in preview.stdout
    assert "no longer denied (2):" in preview.stdout
    assert "  section:docs/legal/nda.md#nda" in preview.stdout
    assert await system_pool.fetchval("SELECT count(*) FROM kg_events") == events

    # Writes need a grant: cli:bob has none.
    refused = kg("decision", "record", "Sign it", env={**env, "KG_ACTOR": "cli:bob"}, cwd=tmp_path)
    assert refused.returncode == 1
    assert "cli:bob may not run record_decision in this project" in refused.stderr
    assert "policy:default, policy:team-writes" in refused.stderr
    allowed = kg("decision", "record", "Sign it", env=env, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    actors = await system_pool.fetch(
        "SELECT payload->>'actor' AS actor FROM kg_events WHERE event_type = 'ActionRefused'"
    )
    assert [r["actor"] for r in actors] == ["cli:bob"]


async def test_path_nodes_and_a_task_without_a_mode(
    db_url: str, tmp_path: Path, shop: object
) -> None:
    env = cli_env(db_url)

    found = kg("path", "component:checkout", "adr:0007", env=env, cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "component:checkout" in found.stdout and "-> REFERENCES adr:0007" in found.stdout
    # The only way to the HSM is through the vault, which a policy denies.
    blocked = kg("path", "component:checkout", "component:hsm", env=env, cwd=tmp_path)
    assert blocked.returncode == 1
    assert "no path from component:checkout to component:hsm" in blocked.stdout

    types = kg("nodes", env=env, cwd=tmp_path)
    assert types.returncode == 0, types.stderr
    assert "3  Component" in types.stdout  # the vault is hidden, and only counted
    assert "1 node(s) hidden by policy" in types.stdout
    components = kg("nodes", "--type", "Component", env=env, cwd=tmp_path)
    assert "component:payments  Payments" in components.stdout
    assert "component:vault" not in components.stdout and "SECRET" not in components.stdout

    built = kg("context", "build", "--task", "card payments gateway", env=env, cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    assert "context_graph_id" in built.stdout
