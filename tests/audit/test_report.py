"""``kg audit report``: one self-contained HTML file, rendered in headless Chromium: the lineage
diagram's SVG exists and names the decision; denied nodes appear nowhere. Also
``kg lineage ID --format mermaid``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kg.context.service import build_context_graph, parse_request
from kg.decisions import record_decision
from kg.events import EventMetadata
from kg.runtime import Runtime
from tests.audit.test_checkpoints import cli_env, ok
from tests.support import kg

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile}", "--virtual-time-budget=20000", *args],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


@pytest.fixture
async def decision(shop: Runtime) -> str:
    graph = await build_context_graph(shop, parse_request(anchors=["component:payments"]))
    assert graph.governance.excluded_count > 0, "the shop's vault is denied by policy"
    recorded = await record_decision(
        shop,
        text="Route card payments through the gateway",
        rationale="ADR-0007 <requires> it",
        context_graph_ids=[graph.context_graph_id],
        metadata=EventMetadata(actor="agent-7"),
    )
    return recorded.node_id


async def test_lineage_prints_a_mermaid_flowchart(
    decision: str, db_url: str, tmp_path: Path
) -> None:
    out = ok(kg("lineage", decision, "--format", "mermaid", env=cli_env(db_url), cwd=tmp_path))
    assert out.startswith("flowchart LR")
    assert decision in out and "-->|INFORMED_BY|" in out and "-->|CONTAINED|" in out
    assert "#lt;requires#gt;" not in out  # labels carry names, rationale stays in the report
    assert "vault" not in out.lower()


async def test_the_report_renders_offline_with_its_diagram(
    decision: str, db_url: str, tmp_path: Path
) -> None:
    assert CHROMIUM is not None, (
        "chromium is not installed: run scripts/setup (it installs Debian's chromium), or "
        "apt-get install chromium"
    )
    env = cli_env(db_url)
    ok(kg("audit", "keygen", "-o", str(tmp_path / "key"), env=env, cwd=tmp_path))
    cp = tmp_path / "cp.json"
    ok(kg("audit", "checkpoint", "--key", str(tmp_path / "key"), "-o", str(cp), env=env,
          cwd=tmp_path))  # fmt: skip
    report = tmp_path / "report.html"
    ok(kg("audit", "report", "--decision", decision, "--checkpoint", str(cp), "-o", str(report),
          env=env, cwd=tmp_path))  # fmt: skip
    page = report.read_text(encoding="utf-8")
    assert "<script src" not in page and "http://" not in page.split("<script>")[0]
    visible = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    assert "vault" not in visible.lower(), "a denied node is counted, never named"
    assert "agent-7" in visible and "ADR-0007 &lt;requires&gt; it" in visible
    assert "excluded" in visible and "every proof verifies" in visible
    assert "extends it" in visible  # the checkpoint check

    dom = chromium("--dump-dom", report.as_uri(), profile=tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    svg = re.search(r"<svg[^>]*aria-roledescription=\"flowchart[^\"]*\".*?</svg>", dom.stdout, re.S)
    assert svg, "mermaid rendered no flowchart SVG:\n" + dom.stdout[:3000]
    assert decision in svg.group(0), "the diagram names the decision"
    assert "vault" not in svg.group(0).lower()

    shot = tmp_path / "report.png"  # kept as the test's artifact, under pytest's tmp dir
    chromium(f"--screenshot={shot}", "--window-size=1400,2400", report.as_uri(),
             profile=tmp_path / "profile")  # fmt: skip
    assert shot.exists() and shot.stat().st_size > 10_000
