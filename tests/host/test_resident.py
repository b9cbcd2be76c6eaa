"""The resident command host: while the embedded server is warm, its watchdog keeps a warm
interpreter that runs ``kg`` command lines in forked children, with the client's descriptors,
environment and working folder. Real ``kg`` processes, a real git repository and a real
embedded server."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kg.host import resident
from kg.host.idle import watchdog_pid
from tests.support import kg, wait_for


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture(scope="module")
def project() -> Iterator[tuple[Path, dict[str, str]]]:
    """A git project with specs, ingested, whose server (and host) stay warm for these tests
    (one project for all: each test leaves it as it found it, apart from the log)."""
    root = Path(tempfile.mkdtemp(prefix="kg-res-"))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "Dev")
    (root / "docs").mkdir()
    (root / "docs/payments.md").write_text("# Payments\n\n## Refunds\n\nRefunds take 5 days.\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "specs")
    env = {k: v for k, v in os.environ.items() if k not in ("KG_DATABASE_URL", "XDG_RUNTIME_DIR")}
    env.update(KG_PROJECT_ROOT=str(root), KG_EMBEDDER="hashing", KG_SERVER_IDLE="300")
    env.pop(resident.RESIDENT_ENV, None)
    # A sync (not an ingest) records the commit it reached, so every test's sync is incremental
    # from here, whichever tests ran before it in this worker (a parallel run spreads them).
    for command in (("init",), ("sync",)):
        done = kg(*command, env=env, cwd=root)
        assert done.returncode == 0, done.stderr
    sock = resident.socket_path(root / ".kg")
    wait_for(sock.exists, "the last kg left a warm host listening")
    yield root, env
    wait_for(sock.exists, "a warm host listens (a test that retired one left a new one)")
    kg("server", "stop", "--force", env=env, cwd=root)
    wait_for(lambda: not sock.exists(), "the host closed with its server")
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def in_project(
    project: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, dict[str, str]]:
    """This test process as a shell in the project (for calling the client directly)."""
    root, env = project
    for key in list(os.environ):
        if key not in env:
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(root)
    return root, env


def test_a_command_runs_in_the_warm_host_with_this_process_descriptors(
    in_project: tuple[Path, dict[str, str]], capfd: pytest.CaptureFixture[str]
) -> None:
    status = resident.run_in_host(["status"])
    out, _ = capfd.readouterr()
    assert status == 0, "the host took the command and reported its exit status"
    assert "events" in out, "its output reached this process's standard output"


def test_exit_status_and_errors_come_back_from_the_host(
    in_project: tuple[Path, dict[str, str]],
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert resident.run_in_host(["status", "--no-such-option"]) == 2
    err = capfd.readouterr().err
    assert "No such option" in err
    assert "Usage: kg status" in err, "the usage names kg, not the host's module"

    monkeypatch.setenv("KG_TOKEN_BUDGET", "lots")  # the client's environment is the command's
    assert resident.run_in_host(["status"]) == 1
    assert "KG_TOKEN_BUDGET='lots' is not valid" in capfd.readouterr().err


def test_a_commit_sync_through_the_host_sees_the_clients_repository(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    (root / "docs/payments.md").write_text(
        "# Payments\n\n## Refunds\n\nRefunds take 5 days.\n\n"
        "## Chargebacks\n\nDisputed within 60 days.\n"
    )
    git(root, "commit", "-q", "-am", "chargebacks")
    sub = root / "docs"  # run from a subfolder: the command's cwd is the client's
    synced = kg("sync", env=env, cwd=sub)
    assert synced.returncode == 0, synced.stderr
    assert "1 changed" in synced.stdout
    found = kg("query", "disputed chargebacks", env=env, cwd=sub)
    assert found.returncode == 0, found.stderr
    assert "chargebacks" in found.stdout.lower()


def test_standard_input_and_ctrl_c_reach_the_command(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    command = [sys.executable, "-m", "kg.cli", "rules", "detect", "--diff", "-", "--json"]
    diff = "--- a/migrations/0002.sql\n+++ b/migrations/0002.sql\n@@ -0,0 +1 @@\n+ALTER TABLE t;\n"
    done = subprocess.run(command, input=diff, env=env, cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "migrations/0002.sql" in done.stdout, "the diff was read from the client's stdin"

    waiting = subprocess.Popen(
        command, stdin=subprocess.PIPE, env=env, cwd=root, stderr=subprocess.PIPE
    )
    time.sleep(1.0)  # let it reach the read; the assertion below does not depend on timing
    waiting.send_signal(signal.SIGINT)
    waiting.communicate(timeout=60)
    assert waiting.returncode != 0, "Ctrl-C was forwarded and ended the command"


def test_concurrent_commands_from_several_shells_share_one_server(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    shells = [
        subprocess.Popen(
            [sys.executable, "-m", "kg.cli", "status"],
            env=env,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [shell.communicate(timeout=120) for shell in shells]
    assert [shell.returncode for shell in shells] == [0, 0, 0, 0], results
    assert all("events" in out for out, _ in results)


def test_a_host_running_other_kg_code_retires_and_the_next_one_runs_the_new_code(
    in_project: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, env = in_project
    pgdata = root / ".kg/pgdata"
    old = watchdog_pid(pgdata)
    assert old is not None
    with monkeypatch.context() as patched:
        patched.setattr(resident, "code_fingerprint", lambda: "kg as upgraded since")
        assert resident.run_in_host(["status"]) is None, "the command runs in its own process"
    wait_for(lambda: watchdog_pid(pgdata) != old, "the stale host retired")

    again = kg("status", env=env, cwd=root)  # in its own process; at exit it starts a new host
    assert again.returncode == 0, again.stderr
    wait_for(lambda: resident.socket_path(root / ".kg").exists(), "a new host listens")
    assert watchdog_pid(pgdata) not in (None, old)


def test_resident_0_and_an_external_database_keep_commands_in_their_own_process(
    in_project: tuple[Path, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:
        patched.setenv(resident.RESIDENT_ENV, "0")
        assert resident.run_in_host(["status"]) is None
    with monkeypatch.context() as patched:
        patched.setenv("KG_DATABASE_URL", "postgresql://elsewhere/kg")
        assert resident.run_in_host(["status"]) is None
    assert resident.run_in_host(["mcp"]) is None
    assert resident.run_in_host(["server", "status"]) is None


def test_the_git_hooks_run_in_the_warm_host(
    in_project: tuple[Path, dict[str, str]], capfd: pytest.CaptureFixture[str]
) -> None:
    root, env = in_project
    (root / "docs/payments.md").write_text("# Payments\n\n## Refunds\n\nRefunds take 7 days.\n")
    git(root, "commit", "-q", "-am", "refunds are slower")
    assert resident.run_in_host(["sync"], entry="hook") == 0, "the host ran the hook's sync"
    assert "sync: incremental" in capfd.readouterr().out

    installed = kg("hooks", "install", env=env, cwd=root)
    assert installed.returncode == 0, installed.stderr
    assert "kg.cli.hook_entry post-commit" in (root / ".git/hooks/post-commit").read_text()
    (root / "docs/payments.md").write_text("# Payments\n\n## Refunds\n\nRefunds take 3 days.\n")
    git(root, "commit", "-q", "-am", "refunds are faster")
    log = (root / ".kg/hooks.log").read_text()
    assert log.count("sync: incremental") == 1, log


def _host_children(pgdata: Path) -> set[int]:
    """The processes the warm host (the server's watchdog) forked: the commands it runs."""
    host = watchdog_pid(pgdata)
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == host:
            found.add(int(entry.name))
    return found


def _waiting_command(
    root: Path, env: dict[str, str], preexec: Callable[[], None] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """A `kg` command that waits on its standard input, run by the warm host; and the pid of
    the host's child that runs it."""
    before = _host_children(root / ".kg/pgdata")
    caller = subprocess.Popen(
        [sys.executable, "-m", "kg.cli", "rules", "detect", "--diff", "-", "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=root,
        preexec_fn=preexec,
    )
    wait_for(lambda: _host_children(root / ".kg/pgdata") - before, "the host runs the command")
    (child,) = _host_children(root / ".kg/pgdata") - before
    return caller, child


def test_a_command_dies_with_its_caller(project: tuple[Path, dict[str, str]]) -> None:
    """Issue 30 A5: `kill -9` of `kg` used to leave the command running in the host (an
    ingest went on and finished after its client died)."""
    root, env = project
    caller, child = _waiting_command(root, env)
    assert caller.stdin is not None
    try:
        caller.kill()
        caller.wait(timeout=60)
        wait_for(
            lambda: not Path(f"/proc/{child}").exists(), "the command ended with its caller", 60
        )
    finally:
        caller.stdin.close()


def test_a_command_runs_under_its_callers_ulimits(project: tuple[Path, dict[str, str]]) -> None:
    """Issue 30 A5: the caller's `ulimit`s did not apply to a command the host ran."""
    import re
    import resource

    root, env = project
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (201, hard))
        resource.setrlimit(resource.RLIMIT_CPU, (3001, resource.RLIM_INFINITY))

    caller, child = _waiting_command(root, env, limited)
    assert caller.stdin is not None
    try:
        limits = Path(f"/proc/{child}/limits").read_text()
    finally:
        caller.stdin.close()
        caller.wait(timeout=60)
    assert re.search(r"Max open files\s+201\s", limits), limits
    assert re.search(r"Max cpu time\s+3001\s", limits), limits


def test_a_dependency_upgrade_changes_the_code_fingerprint(tmp_path: Path) -> None:
    """Issue 30 A6: the warm host kept running old dependency code after a dependency was
    upgraded (its fingerprint covered kg's own files only). pip adds a ``*.dist-info`` folder
    where it installs; here the dependencies' folder is a PYTHONPATH entry."""
    deps = tmp_path / "deps"
    deps.mkdir()
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{deps}"}
    probe = [
        sys.executable,
        "-c",
        "from kg.host import resident; print(resident.code_fingerprint())",
    ]

    def fingerprint() -> str:
        done = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    before = fingerprint()
    assert fingerprint() == before, "stable while nothing changes"
    (deps / "somelib-2.0.dist-info").mkdir()  # pip upgraded somelib
    assert fingerprint() != before
