"""``kg rules detect|query`` as a user runs them: subprocesses on a real database."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support import cli_env, kg

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_rules_query_prints_a_checklist_and_detect_shows_the_evidence(
    db_url: str, tmp_path: Path
) -> None:
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root)
    (root / ".kg").mkdir(exist_ok=True)
    env = cli_env(db_url)
    assert kg("ingest", ".", env=env, cwd=root).returncode == 0

    out = kg("rules", "query", "--task", "add an MCP tool", "--path", "mcp_server/tools.py",
             env=env, cwd=root)  # fmt: skip
    assert out.returncode == 0, out.stderr
    # The file heads its statements once; each statement gives its line (mcp-tools.mdc:6).
    assert ".cursor/rules/mcp-tools.mdc:\n" in out.stdout
    assert "- L6 Do not import `kg.cli` from `mcp_server`.\n" in out.stdout
    assert "served_id ds_" in out.stderr

    diff = root / "change.diff"
    diff.write_text(
        "diff --git a/tests/test_a.py b/tests/test_a.py\n+++ b/tests/test_a.py\n"
        "+def test_x(): ...\n"
    )
    detected = kg("rules", "detect", "--diff", str(diff), "--json", env=env, cwd=root)
    assert detected.returncode == 0, detected.stderr
    data = json.loads(detected.stdout)
    assert data["layer"] == "5-Tests"
    assert data["path_layers"] == [
        {"path": "tests/test_a.py", "layer": "5-Tests", "convention": "tests"}
    ]

    missing = kg("rules", "detect", "--diff", "nope.diff", env=env, cwd=root)
    assert missing.returncode == 1
    assert "error: cannot read the diff file nope.diff: No such file or directory" in missing.stderr

    bad = kg("rules", "query", "--layer", "Kitchen", env=env, cwd=root)
    assert bad.returncode == 1
    assert "error: layer 'Kitchen' is unknown" in bad.stderr
