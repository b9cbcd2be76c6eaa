"""The suite's warm ``kg`` interpreter (tests/command_host.py, tests/kg_client.py): a test's
``kg`` runs in a child of it, with the test's environment, folder, output and exit status,
and without importing kg's command line again (issue 34 item 6)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support import cli_env, command_host, kg


def _imported(stderr: str) -> set[str]:
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_a_command_runs_in_the_warm_interpreter_as_its_own_process(
    db_url: str, tmp_path: Path
) -> None:
    assert command_host() is not None, "the suite's host started"
    env = cli_env(db_url, KG_TENANT="elsewhere", PYTHONPROFILEIMPORTTIME="1")
    done = kg("status", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "scope:         tenant elsewhere, project webshop" in done.stdout, "its environment"
    imported = _imported(done.stderr)
    assert "kg.host.resident" in imported, "the client ran"
    assert not imported & {"typer", "kg.cli.app", "kg.runtime", "asyncpg"}, "none imported again"

    failed = kg("inspect", "nowhere:nothing", env=cli_env(db_url), cwd=tmp_path)
    assert failed.returncode == 1
    assert "nowhere:nothing" in failed.stderr, "its error output and exit status come back"

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nSee [b](b.md).\n")
    linted = kg("lint", "docs", env=cli_env(db_url), cwd=tmp_path)
    assert linted.returncode == 1 and "docs/a.md" in linted.stdout, "in the test's folder"


def test_the_product_host_tests_and_the_long_lived_commands_start_cold(
    db_url: str, tmp_path: Path
) -> None:
    """``KG_RESIDENT`` on (a test of the product's own host) and ``kg mcp|server|watch``
    (which the product's host never takes) run as a fresh ``python`` would."""
    resident = cli_env(db_url, KG_RESIDENT="1", PYTHONPROFILEIMPORTTIME="1")
    done = kg("status", env=resident, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "kg.cli.app" in _imported(done.stderr)
    server = kg("server", "status", env={**cli_env(db_url), "PYTHONPROFILEIMPORTTIME": "1"},
                cwd=tmp_path)  # fmt: skip
    assert "kg.cli.app" in _imported(server.stderr)
    assert os.environ.get("KG_RESIDENT") == "0", "the suite's default is unchanged"
