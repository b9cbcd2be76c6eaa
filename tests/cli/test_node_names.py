"""Issue 30 item 7 over the CLI: ``kg inspect``, ``kg context build --anchor``, ``kg decision
record --ref`` and ``kg lineage`` read the same names (a path relative to where the command
runs, ``path#anchor``, ``path:line``, a requirement id, an entity name) and answer a name that
names nothing, or several nodes, with the same words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kg.read.names import HOW_TO_NAME
from tests.ingest.code.fixture import SHOP_REPO
from tests.read.test_names import FILES
from tests.support import cli_env, kg

PAY = "function:shop/checkout.py#Checkout.pay"


@pytest.fixture
def project(tmp_path: Path, db_url: str) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "shop"
    shutil.copytree(SHOP_REPO, root)
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    env = cli_env(db_url)
    done = kg("ingest", ".", env=env, cwd=root)
    assert done.returncode == 0, done.stderr
    return root, env


def _said(out: str) -> str:
    return " ".join(out.split())


def test_inspect_reads_every_kind_of_name_from_the_root_or_a_subfolder(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    for where, name, node_id in [
        (root, "shop/checkout.py:25", PAY),
        (root / "shop", "checkout.py:25", PAY),
        (root / "shop", "checkout.py", "document:shop/checkout.py"),
        (root / "docs", "prd.md#payments", "section:docs/prd.md#payments"),
        (root, "FR2", "requirement:docs/prd.md#FR-2"),
        (root / "docs", "Subscription", "apiobject:subscription"),
    ]:
        out = kg("inspect", name, "--depth", "1", env=env, cwd=where)
        assert out.returncode == 0, (name, out.stderr)
        assert out.stdout.split(" ", 1)[0] == node_id, (name, out.stdout)


def test_context_anchors_and_decision_references_take_the_same_names(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    build = kg(
        "context", "build", "-a", "checkout.py:25", "-a", "../docs/prd.md", "-a", "fr-1",
        "-a", "Invoices", "--max-depth", "1", "--json", env=env, cwd=root / "shop",
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    graph = json.loads(build.stdout)
    anchors = {n["node_id"] for n in graph["nodes"] if n["reason"] == "anchor"}
    assert anchors == {
        PAY,
        "document:docs/prd.md",
        "requirement:docs/prd.md#FR-1",
        "apiobject:invoice",
    }

    rec = kg(
        "decision", "record", "Pay through the gateway", "--ref", "prd.md#payments",
        "--ref", "../shop/checkout.py:25", "--ref", "FR2", env=env, cwd=root / "docs",
    )  # fmt: skip
    assert rec.returncode == 0, rec.stderr
    node_id = rec.stdout.split("recorded ")[1].split(" ")[0]
    lineage = kg("lineage", node_id.removeprefix("decision:"), "--json", env=env, cwd=root)
    assert lineage.returncode == 0, lineage.stderr
    assert json.loads(lineage.stdout)["decision_id"] == node_id
    edges = kg("inspect", node_id, "--direction", "out", "--depth", "1", env=env, cwd=root)
    for referenced in ("section:docs/prd.md#payments", PAY, "requirement:docs/prd.md#FR-2"):
        assert f"REFERENCES → {referenced} " in edges.stdout, edges.stdout


def test_every_command_answers_an_unknown_or_ambiguous_name_alike(
    project: tuple[Path, dict[str, str]],
) -> None:
    root, env = project
    commands = {
        "inspect": ("inspect", "{}"),
        "context": ("context", "build", "-a", "{}"),
        "decision": ("decision", "record", "x", "--ref", "{}"),
    }
    for command, args in commands.items():
        missing = kg(*(a.format("docs/nope.md") for a in args), env=env, cwd=root)
        assert missing.returncode == 1, command
        said = _said(missing.stderr)
        assert "docs/nope.md not found in this project" in said, (command, said)
        assert HOW_TO_NAME in said, (command, said)
        several = kg(*(a.format("Charge") for a in args), env=env, cwd=root)
        assert several.returncode == 1, command
        said = _said(several.stderr)
        assert "the name 'Charge' is ambiguous" in said, (command, said)
        assert "apiobject:charge (APIObject), concept:charge (Concept)" in said, (command, said)
    lineage = kg("lineage", "docs/prd.md", env=env, cwd=root)
    assert lineage.returncode == 1
    assert "'docs/prd.md' names 'document:docs/prd.md', not a decision" in _said(lineage.stderr)
