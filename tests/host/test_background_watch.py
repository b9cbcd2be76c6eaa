"""``kg watch --background``: one detached watcher per project, which keeps the embedded server
warm, re-ingests saves, and stops with the server. Real ``kg`` processes, a real git working
tree and the project's own embedded server; waits poll, nothing is timed."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from kg.host.watcher import PID_FILE, running_watcher
from tests.host.test_idle_server import postmaster
from tests.ingest.gitrepo import Repo
from tests.support import kg, wait_for


@pytest.fixture
def project() -> Iterator[tuple[Repo, dict[str, str]]]:
    """A git project with one committed spec, initialised and ingested, whose server would
    stop 2 s after the last kg (short path: the server's socket lives in it)."""
    root = Path(tempfile.mkdtemp(prefix="kg-bgw-"))
    repo = Repo(root)
    repo.write("docs/a.md", "# A\n\nThe first text.\n")
    repo.commit("specs")
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL", "XDG_RUNTIME_DIR")}
    env.update(KG_PROJECT_ROOT=str(root), KG_EMBEDDER="hashing", KG_SERVER_IDLE="2")
    for args in (("init",), ("sync",)):
        done = kg(*args, env=env, cwd=root)
        assert done.returncode == 0, done.stderr
    yield repo, env
    kg("watch", "--stop", env=env, cwd=root)
    kg("server", "stop", "--force", env=env, cwd=root)
    shutil.rmtree(root, ignore_errors=True)


def found(root: Path, env: dict[str, str], word: str) -> bool:
    done = kg("query", word, "--mode", "fulltext", env=env, cwd=root)
    return done.returncode == 0 and "section:docs/a.md#a" in done.stdout


def test_a_background_watcher_reingests_saves_and_stops_with_the_server(
    project: tuple[Repo, dict[str, str]],
) -> None:
    repo, env = project
    root, state = repo.root, repo.root / ".kg"

    started = kg("watch", "--background", env=env, cwd=root)
    assert started.returncode == 0, started.stderr
    watcher = running_watcher(state)
    assert watcher is not None
    assert f"watching {root} in the background (pid {watcher.pid}" in started.stdout

    again = kg("watch", "--background", env=env, cwd=root)
    assert again.returncode == 0, again.stderr
    assert f"already watching {root} in the background (pid {watcher.pid}" in again.stdout

    status = kg("server", "status", env=env, cwd=root)
    assert f"pid {watcher.pid}:" in status.stdout, "the watcher holds the server"
    assert "kg watch runs in the background" in status.stdout

    (root / "docs/a.md").write_text("# A\n\nThe zanzibar text, saved not committed.\n")
    wait_for(lambda: found(root, env, "zanzibar"), "the saved edit became searchable")
    server = postmaster(root)
    assert server is not None, "the watcher kept the server up past its idle time"

    stopped = kg("server", "stop", env=env, cwd=root)  # no --force: the watcher stops with it
    assert stopped.returncode == 0, stopped.stderr
    assert not psutil.pid_exists(watcher.pid) or (
        psutil.Process(watcher.pid).status() == psutil.STATUS_ZOMBIE
    )
    assert not (state / PID_FILE).exists()
    assert postmaster(root) is None
    assert "watching" in (state / "watch.log").read_text(), "its output went to the log"


def test_kg_watch_stop_ends_the_watcher_alone(project: tuple[Repo, dict[str, str]]) -> None:
    repo, env = project
    root = repo.root
    assert kg("watch", "--background", env=env, cwd=root).returncode == 0
    watcher = running_watcher(root / ".kg")
    assert watcher is not None

    stopped = kg("watch", "--stop", env=env, cwd=root)
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped kg watch (pid {watcher.pid})" in stopped.stdout
    assert running_watcher(root / ".kg") is None
    assert "no kg watch was running" in kg("watch", "--stop", env=env, cwd=root).stdout


def test_a_watcher_that_cannot_start_says_why(project: tuple[Repo, dict[str, str]]) -> None:
    repo, env = project
    unreachable = {**env, "KG_DATABASE_URL": "postgresql://kg@127.0.0.1:9/nowhere"}
    failed = kg("watch", "--background", env=unreachable, cwd=repo.root)
    assert failed.returncode != 0
    assert "kg watch exited" in failed.stderr and "before it started watching" in failed.stderr
    assert "127.0.0.1" in failed.stderr or "database" in failed.stderr.lower(), failed.stderr
    assert running_watcher(repo.root / ".kg") is None


def test_background_watch_outside_a_project_names_the_fix(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KG_DATABASE_URL"}
    env["KG_PROJECT_ROOT"] = str(tmp_path)
    done = kg("watch", "--background", env=env, cwd=tmp_path)
    assert done.returncode != 0
    assert "run `kg init` first" in done.stderr
