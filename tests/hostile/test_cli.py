"""Hostile conditions met by the ``kg`` command line: a symlinked folder leading out of the
project, and the database going away under a running backfill."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from backfill.generate import GeneratedLegacy, generate
from kg.audit.verify import verify_tenant
from kg.runtime import Runtime
from tests.support import cli_env, kg

# Small chunks with a pause after each commit: the server goes away between two of them.
SLOW_CHUNKS = ("--chunk-size", "100", "--pause", "1", "--no-catch-up")


async def test_a_symlinked_folder_outside_the_project_is_refused_unlisted(
    runtime: Runtime, db_url: str, project_dir: Path
) -> None:
    root = runtime.settings.project_root
    outside = project_dir / "elsewhere"  # a folder of the test's own, outside the project
    (outside / "private").mkdir(parents=True)
    for i in range(5):
        (outside / "private" / f"secret-{i}.md").write_text("# Not yours\n")
    (root / "docs").mkdir()
    (root / "docs" / "good.md").write_text("# Good\n\nFine.\n")
    (root / "docs" / "usr").symlink_to(outside, target_is_directory=True)

    done = kg("ingest", "docs/usr", "docs", env=cli_env(db_url), cwd=root)

    output = done.stdout + done.stderr
    assert f"docs/usr:1: refused: folder docs/usr resolves to {outside}, outside the project" in (
        output
    ), output
    assert "secret-" not in output
    assert "Traceback" not in output
    listed = [line for line in output.splitlines() if "docs/usr/" in line]
    assert not listed, f"names of files outside the project were listed: {listed[:5]}"
    assert done.returncode == 1, "a refused path fails the command, as any rejected path does"
    assert "1 changed" in done.stdout, done.stdout  # docs/good.md, not anything under /usr
    assert (await verify_tenant(runtime.app_pool, runtime.scope.tenant_id)).ok


@pytest.fixture
def dedicated_server() -> Iterator[tuple[str, Path]]:
    """A PostgreSQL of this test's own (the shared one must survive): its URL and data folder.
    Stopped for good and removed afterwards, whatever the test did to it. Not under pytest's
    basetemp (see tests/conftest.py)."""
    from kg.host.embedded import start_embedded

    state = Path(tempfile.mkdtemp(prefix="kg-hostile-pg-"))
    url = start_embedded(state, database="kg_killed", keep_running=True)
    pgdata = state / "pgdata"
    try:
        yield url, pgdata
    finally:
        pid_file = pgdata / "postmaster.pid"
        if pid_file.exists():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGQUIT)
        shutil.rmtree(state, ignore_errors=True)


async def test_a_server_killed_mid_backfill_gives_one_line_saying_a_rerun_resumes(
    dedicated_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, pgdata = dedicated_server
    legacy: GeneratedLegacy = generate(tmp_path / "legacy", rows=3000, seed=11)
    env = cli_env(url)
    assert kg("init", env=env, cwd=tmp_path).returncode == 0
    proc = subprocess.Popen(  # noqa: ASYNC220 (a child to kill the server under, not awaited)
        [sys.executable, "-m", "kg.cli", "backfill", *map(str, legacy.paths), *SLOW_CHUNKS],
        env={**env, "COLUMNS": "200"},  # also over a COLUMNS inherited (80 in an xdist worker)
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while line and not line.startswith("committed "):
            line = proc.stderr.readline()
        assert line.startswith("committed "), line
        # An immediate shutdown: every backend is terminated, the socket disappears.
        postmaster = int((pgdata / "postmaster.pid").read_text().split()[0])
        os.kill(postmaster, signal.SIGQUIT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert proc.returncode == 1
    lines = [x for x in (out + err).splitlines() if x.strip() and not x.startswith("committed ")]
    assert len(lines) == 1, "\n".join(lines[:40])
    assert lines[0].startswith("error: the database went away"), lines[0]
    assert "rerun the same command" in lines[0] and "resumes where it stopped" in lines[0]
    assert "Traceback" not in err and "never awaited" not in err
