"""``kg mcp config``: each client's configuration printed, and merged into its file with
``--write`` without touching other servers; a configuration that really starts the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kg.cli.mcp_config import desktop_config


def kg(cwd: Path, *args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KG_TENANT": "acme", "KG_PROJECT": "webshop"}
    env.pop("KG_DATABASE_URL", None)
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", "mcp", "config", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


@pytest.mark.parametrize(
    ("client", "key", "typed"),
    [("claude-code", "mcpServers", True), ("cursor", "mcpServers", False),
     ("vscode", "servers", True), ("claude-desktop", "mcpServers", False)],
)  # fmt: skip
def test_printed_configuration_starts_kg_for_this_project(
    repo: Path, client: str, key: str, typed: bool
) -> None:
    done = kg(repo / "src", "--client", client)  # from a subfolder: the root is found
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)[key]["kg"]
    assert entry["command"] == sys.executable
    assert entry["args"] == ["-m", "kg.cli", "mcp"]
    assert entry["env"]["KG_PROJECT_ROOT"] == str(repo.resolve())
    assert entry["env"]["KG_TENANT"] == "acme" and entry["env"]["KG_PROJECT"] == "webshop"
    assert ("type" in entry) is typed
    assert "or run with --write" in done.stderr


def test_write_merges_into_the_clients_file_and_keeps_other_servers(repo: Path) -> None:
    target = repo / ".vscode" / "mcp.json"
    target.parent.mkdir()
    other = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}
    target.write_text(json.dumps({"servers": {"github": other}, "inputs": [{"id": "x"}]}))
    first = kg(repo, "--client", "vscode", "--write")
    assert first.returncode == 0, first.stderr
    assert f"added the kg server to {target}" in " ".join(first.stderr.split())
    written: dict[str, Any] = json.loads(target.read_text())
    assert written["servers"]["github"] == other and written["inputs"] == [{"id": "x"}]
    assert written["servers"]["kg"]["env"]["KG_PROJECT_ROOT"] == str(repo.resolve())
    again = kg(repo, "--client", "vscode", "--write")
    assert "updated the kg server in" in again.stderr
    assert json.loads(target.read_text()) == written

    fresh = kg(repo, "--client", "claude-code", "--write")
    assert fresh.returncode == 0, fresh.stderr
    assert set(json.loads((repo / ".mcp.json").read_text())["mcpServers"]) == {"kg"}


def test_write_refuses_a_file_it_cannot_parse_and_leaves_it(repo: Path) -> None:
    target = repo / ".cursor" / "mcp.json"
    target.parent.mkdir()
    target.write_text('{"mcpServers": {"x": {}},}')  # a trailing comma
    done = kg(repo, "--client", "cursor", "--write")
    assert done.returncode == 1
    assert "is not valid JSON" in done.stderr and "nothing was written" in done.stderr
    assert target.read_text() == '{"mcpServers": {"x": {}},}'
    unknown = kg(repo, "--client", "zed")
    assert unknown.returncode == 1
    assert "--client 'zed' is unknown: use one of claude-code, claude-desktop" in unknown.stderr


def test_claude_desktop_is_written_in_the_users_file(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = kg(repo, "--client", "claude-desktop", "--write", home=home)
    assert done.returncode == 0, done.stderr
    path = desktop_config(home)
    assert json.loads(path.read_text())["mcpServers"]["kg"]["env"]["KG_PROJECT_ROOT"] == str(
        repo.resolve()
    )
    assert desktop_config(home, "darwin").parts[-4:] == (
        "Library", "Application Support", "Claude", "claude_desktop_config.json",
    )  # fmt: skip
