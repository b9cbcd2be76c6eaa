"""A broken policy file fails closed (issue 30, item 2).

A policy file with an unknown key (``selectors:``) made ``kg sync`` print ``policy files not
applied (1 problem(s))``, exit 0, and ingest the very files the intended deny was written to
hide. While any policy file has an error, ``kg sync``, ``kg ingest``, the post-commit hook and
the ``ingest_markdown`` tool ingest nothing new, fail (the hook still lets the commit
through), and name the file and line; the policies already in force stay in force. Real git,
real ``kg`` processes, the test database.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import asyncpg

from tests.mcp.client import server_env, stdio_session
from tests.support import cli_env, kg

GOOD = 'policies:\n  - id: legal\n    effect: deny\n    paths: ["docs/legal/**"]\n'
BROKEN = 'policies:\n  - id: hr\n    effect: deny\n    selectors:\n      paths: ["docs/hr/**"]\n'
FIXED = 'policies:\n  - id: hr\n    effect: deny\n    paths: ["docs/hr/**"]\n'
SALARIES = "document:docs/hr/salaries.md"


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def nodes(pool: asyncpg.Pool) -> set[str]:
    return {r[0] for r in await pool.fetch("SELECT node_id FROM kg_nodes")}


async def policies(pool: asyncpg.Pool) -> set[str]:
    rows = await pool.fetch("SELECT node_id FROM kg_nodes WHERE node_type = 'Policy'")
    return {r[0] for r in rows}


async def test_sync_ingest_hook_and_tool_ingest_nothing_while_a_policy_file_is_broken(
    db_url: str, tmp_path: Path, system_pool: asyncpg.Pool
) -> None:
    root = tmp_path
    env = cli_env(db_url, KG_PROJECT_ROOT=str(root))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    write(root, ".kg/policies/legal.yaml", GOOD)
    write(root, "docs/prd.md", "# PRD\n\nThe product.\n")
    write(root, "docs/legal/nda.md", "# NDA\n\nTerms.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "specs")
    first = kg("sync", env=env, cwd=root)
    assert first.returncode == 0, first.stderr
    assert "policy:legal" in await policies(system_pool)
    before = await nodes(system_pool)

    # The intended deny of docs/hr/** has a typo; the file it was meant to hide arrives.
    write(root, ".kg/policies/hr.yaml", BROKEN)
    write(root, "docs/hr/salaries.md", "# Salaries\n\nSALARY-TABLE Alice 100k.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "hr")

    for argv in (("sync",), ("ingest", "docs"), ("ingest", "docs/hr/salaries.md")):
        done = kg(*argv, env=env, cwd=root)
        said = done.stdout + done.stderr
        assert done.returncode != 0, f"`kg {' '.join(argv)}` exited 0:\n{said}"
        assert ".kg/policies/hr.yaml:2: " in said and "'selectors'" in said, said
        assert "nothing new was ingested" in said
        assert await nodes(system_pool) == before, f"`kg {' '.join(argv)}` ingested"

    async with stdio_session(server_env(db_url) | {"KG_PROJECT_ROOT": str(root)}, root) as s:
        called = await s.call_tool("ingest_markdown", {"paths": ["docs/hr"]})
    assert called.is_error and ".kg/policies/hr.yaml:2" in str(called.content)
    assert await nodes(system_pool) == before

    installed = kg("hooks", "install", env=env, cwd=root)
    assert installed.returncode == 0, installed.stderr
    write(root, "docs/hr/salaries.md", "# Salaries\n\nSALARY-TABLE Alice 110k.\n")
    git(root, "commit", "-q", "-am", "raise", env=env)  # the hook never fails the commit
    log = (root / ".kg/hooks.log").read_text()
    assert "sync: error:" in log and ".kg/policies/hr.yaml:2" in log, log
    assert await nodes(system_pool) == before, "the hook ingested nothing"
    assert await policies(system_pool) == {"policy:legal"}, "the policy in force stays"

    write(root, ".kg/policies/hr.yaml", FIXED)
    git(root, "commit", "-q", "-am", "fix the hr policy", env=env)
    fixed = kg("sync", env=env, cwd=root)
    assert fixed.returncode == 0, fixed.stderr
    assert await policies(system_pool) == {"policy:legal", "policy:hr"}
    assert SALARIES in await nodes(system_pool)
    hidden = kg("query", "SALARY-TABLE Alice", "--mode", "fulltext", env=env, cwd=root)
    assert "SALARY-TABLE" not in hidden.stdout, "ingested with its deny in force"
