"""The git hooks, run by real ``git commit`` in a temporary repository."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest

from kg.config import Scope
from tests.ingest.gitrepo import Repo

UNREACHABLE = "postgresql://bob:s3cret@127.0.0.1:1/nowhere"


def kg_env(db_url: str) -> dict[str, str]:
    return {
        "KG_DATABASE_URL": db_url,
        "KG_TENANT": "acme",
        "KG_PROJECT": "webshop",
        "KG_EMBEDDER": "hashing",
    }


def install(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", "hooks", "install", *args],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def commit(repo: Repo, message: str = "change") -> subprocess.CompletedProcess[str]:
    repo.git("add", "-A")
    return repo.git("commit", "-q", "-m", message, check=False)


async def documents(pool: asyncpg.Pool, scope: Scope) -> set[str]:
    rows = await pool.fetch(
        "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND node_id LIKE 'document:%'",
        scope.tenant_id,
        scope.project_id,
    )
    return {r["node_id"] for r in rows}


@pytest.fixture
def repo(tmp_path: Path, db_url: str) -> Repo:
    repo = Repo(tmp_path, kg_env(db_url))
    done = install(repo)
    assert done.returncode == 0, done.stderr
    assert "installed" in done.stdout
    return repo


def test_pre_commit_blocks_integrity_errors_in_staged_markdown(repo: Repo) -> None:
    repo.write("docs/a.md", "# A\n\nSee [b](b.md#scope).\n")
    repo.write("docs/b.md", "# B\n\n## Out of scope\n")
    blocked = commit(repo)
    assert blocked.returncode == 1
    assert "docs/a.md:3: dangling anchor (b.md#scope): no heading #scope in docs/b.md" in (
        blocked.stderr
    )
    assert "commit blocked" in blocked.stderr
    assert repo.git("rev-parse", "--verify", "HEAD", check=False).returncode != 0, "no commit"

    repo.write("docs/b.md", "# B\n\n## Scope\n")
    done = commit(repo)
    assert done.returncode == 0, done.stderr
    assert repo.git("log", "--format=%s").stdout.split() == ["change"]


def test_pre_commit_lets_the_commit_through_when_kg_cannot_run(repo: Repo) -> None:
    repo.env["KG_PYTHON"] = "/nonexistent/python"
    repo.env["KG_DATABASE_URL"] = UNREACHABLE
    repo.write("docs/a.md", "# A\n\n[gone](gone.md)\n")
    done = commit(repo)
    assert done.returncode == 0, "a broken tool must not hold the repository hostage"
    assert "pre-commit lint could not run" in done.stderr


async def test_post_commit_syncs_the_commit_into_the_graph(
    repo: Repo, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    repo.write("docs/a.md", "# A\n")
    assert commit(repo).returncode == 0
    assert await documents(system_pool, scope) == {"document:docs/a.md"}
    repo.write("docs/b.md", "# B\n\n[a](a.md)\n")
    assert commit(repo).returncode == 0
    assert await documents(system_pool, scope) == {"document:docs/a.md", "document:docs/b.md"}
    log = (repo.root / ".kg/hooks.log").read_text()
    assert "sync: full scan (first sync of this database and scope)" in log
    assert "sync: incremental" in log and "1 Markdown or source files changed" in log


def test_post_commit_fails_open_with_the_database_unreachable(repo: Repo) -> None:
    repo.env["KG_DATABASE_URL"] = UNREACHABLE
    repo.write("docs/a.md", "# A\n")
    done = commit(repo, "while the database is down")
    assert done.returncode == 0
    assert repo.git("log", "--format=%s").stdout.strip() == "while the database is down"
    assert "kg: graph sync skipped, the database is unavailable" in done.stderr
    assert "run `kg sync` when it is back" in done.stderr
    log = (repo.root / ".kg/hooks.log").read_text()
    assert "sync: skipped, the database is unavailable: cannot connect to " in log
    assert "postgresql://bob:***@127.0.0.1:1/nowhere" in log
    assert "s3cret" not in log + done.stderr


async def test_post_commit_detaches_above_the_threshold(
    tmp_path: Path, db_url: str, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    repo = Repo(tmp_path, kg_env(db_url))
    assert install(repo, "--background-above", "1").returncode == 0
    hook = (tmp_path / ".git/hooks/post-commit").read_text()
    assert "--background-above 1" in hook
    repo.write("docs/a.md", "# A\n")
    repo.write("docs/b.md", "# B\n")
    assert commit(repo).returncode == 0
    log_file = tmp_path / ".kg/hooks.log"
    assert "syncing in the background" in log_file.read_text()
    for _ in range(600):  # the background sync logs one "sync:" line when it is done
        if "sync: " in log_file.read_text():
            break
        await asyncio.sleep(0.2)
    assert "sync: full scan" in log_file.read_text()
    assert await documents(system_pool, scope) == {"document:docs/a.md", "document:docs/b.md"}


def test_the_background_sync_runs_at_low_cpu_priority(tmp_path: Path, db_url: str) -> None:
    """Issue 30 item 10: background sync ran at normal CPU priority. The test holds the
    project's sync lock, so the background sync waits for it long enough to be looked at."""
    import fcntl
    import os
    import re

    from kg.cli.hook_runner import BACKGROUND_NICE

    repo = Repo(tmp_path, kg_env(db_url))
    assert install(repo, "--background-above", "0").returncode == 0
    repo.write("docs/a.md", "# A\n")
    (tmp_path / ".kg").mkdir(exist_ok=True)
    with (tmp_path / ".kg/sync.lock").open("a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        assert commit(repo).returncode == 0
        log = (tmp_path / ".kg/hooks.log").read_text()
        found = re.search(r"background sync is pid (\d+)", log)
        assert found, log
        stat = Path(f"/proc/{found.group(1)}/stat").read_text()
        nice = int(stat.rsplit(")", 1)[1].split()[16])
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    assert nice == min(os.nice(0) + BACKGROUND_NICE, 19)  # 19: the lowest priority there is


def test_install_keeps_foreign_hooks_unless_forced(tmp_path: Path, db_url: str) -> None:
    repo = Repo(tmp_path, kg_env(db_url))
    mine = tmp_path / ".git/hooks/pre-commit"
    mine.write_text("#!/bin/sh\necho mine\n")
    refused = install(repo)
    assert refused.returncode == 1
    assert "not written by kg" in refused.stderr
    assert mine.read_text() == "#!/bin/sh\necho mine\n"
    forced = install(repo, "--force")
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / ".git/hooks/pre-commit.before-kg").read_text() == "#!/bin/sh\necho mine\n"
    assert "kg hooks install" in mine.read_text()
    assert install(repo).returncode == 0, "reinstalling over kg's own hooks needs no --force"


async def test_a_policy_file_committed_reaches_the_graph_through_the_hooks(
    repo: Repo, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    repo.write("docs/legal/nda.md", "# NDA\n")
    repo.write(
        ".kg/policies/legal.yaml",
        "policies:\n  - id: legal\n    effect: deny\n    paths: ['docs/legal/**']\n",
    )
    assert commit(repo).returncode == 0

    async def policies() -> list[tuple[str, str, str]]:
        rows = await system_pool.fetch(
            "SELECT event_type, stream_id, metadata->>'source' AS source FROM kg_events "
            "WHERE event_type LIKE 'Policy%' ORDER BY position"
        )
        return [(r["event_type"], r["stream_id"], r["source"]) for r in rows]

    assert await policies() == [("PolicyDefined", "policy:legal", ".kg/policies/legal.yaml:2")]
    log = (repo.root / ".kg/hooks.log").read_text()
    assert "1 policy file(s): 1 defined, 0 changed, 0 retired" in log

    # A broken policy file is stopped by the pre-commit hook, file:line.
    repo.write(".kg/policies/legal.yaml", "policies:\n  - id: legal\n    effect: hide\n")
    blocked = commit(repo)
    assert blocked.returncode == 1
    assert ".kg/policies/legal.yaml:2: policy:legal: unknown effect 'hide'" in blocked.stderr

    repo.write(
        ".kg/policies/legal.yaml",
        "policies:\n  - {id: legal, effect: redact, paths: ['docs/legal/**']}\n",
    )
    assert commit(repo).returncode == 0
    repo.git("rm", "-q", ".kg/policies/legal.yaml")
    assert commit(repo).returncode == 0
    assert [kind for kind, _, _ in await policies()] == [
        "PolicyDefined",
        "PolicyChanged",
        "PolicyRetired",
    ]
