"""A policy that selects by node type covers the document's sections (issue 30, item 1).

With ``redact`` (or ``deny``) ``node_types: [Story]``, a context build showed a story's
acceptance criteria in full, and ``kg policy test`` of a deny on Story reported only the
document as newly denied. Path and label selectors always covered sections; a type selector
matches a section by its document's type too, in every read path: context builds (CLI and
MCP), query, inspect, ``kg policy explain`` and ``kg policy test``. Real ``kg`` processes on
the test database.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client

from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import text_of
from tests.support import cli_env, kg

STORY = """\
# Login story

As a customer I want to log in.

## Acceptance criteria

CRITERIA-SECRET: the password is checked against the vault and locked after three tries.
"""
SECTION = "section:docs/stories/login-story.md#acceptance-criteria"
DOCUMENT = "document:docs/stories/login-story.md"
TASK = "password checked locked after three tries acceptance criteria"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def policy_file(effect: str) -> str:
    return f"policies:\n  - id: stories\n    effect: {effect}\n    node_types: [Story]\n"


@pytest.fixture
def story_project(db_url: str, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    env = cli_env(db_url, KG_PROJECT_ROOT=str(tmp_path))
    write(tmp_path, "docs/stories/login-story.md", STORY)
    write(tmp_path, "docs/prd.md", "# PRD\n\nLogin: see [the story](stories/login-story.md).\n")
    done = kg("ingest", "docs", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shown = kg("inspect", DOCUMENT, env=env, cwd=tmp_path)
    assert shown.stdout.startswith(f"{DOCUMENT} (Story)"), "the default schema types it Story"
    return tmp_path, env


@pytest.mark.parametrize("effect", ["redact", "deny"])
async def test_every_read_path_applies_a_story_policy_to_the_storys_sections(
    story_project: tuple[Path, dict[str, str]], runtime: Runtime, effect: str
) -> None:
    root, env = story_project
    write(root, ".kg/policies/stories.yaml", policy_file(effect))
    synced = kg("ingest", "docs", env=env, cwd=root)
    assert synced.returncode == 0, synced.stderr

    runs = [
        ("context", "build", "--task", TASK, "--mode", "semantic", "--json"),
        ("context", "build", "--task", TASK, "--mode", "policy_first", "--json"),
        ("context", "build", "-a", "document:docs/prd.md", "--max-depth", "3", "--json"),
        ("query", "CRITERIA-SECRET password locked", "--mode", "fulltext"),
        ("query", TASK),
        ("inspect", SECTION),
        ("inspect", "document:docs/prd.md", "--depth", "3"),
    ]
    for argv in runs:
        out = kg(*argv, env=env, cwd=root)
        printed = out.stdout + out.stderr
        assert "CRITERIA-SECRET" not in printed, f"`kg {' '.join(argv)}` showed it:\n{printed}"
        if effect == "deny" and argv[0] == "context":
            assert SECTION not in out.stdout, f"`kg {' '.join(argv)}` named the denied section"
    built = json.loads(
        kg("context", "build", "--task", TASK, "--mode", "semantic", "--json", env=env,
           cwd=root).stdout
    )  # fmt: skip
    governance = built["governance"]
    if effect == "deny":
        assert governance["excluded_count"] >= 1
    else:
        shown = [n for n in built["nodes"] if n["node_id"] == SECTION]
        assert shown and shown[0].get("redacted") is True, "kept as id and type, redacted"

    async with Client(create_server(runtime)) as client:
        result = await client.call_tool("build_context_graph", {"task": TASK, "mode": "semantic"})
    returned = text_of(result) + json.dumps(result.structured_content or {})
    assert "CRITERIA-SECRET" not in returned

    explained = kg("policy", "explain", SECTION, env=env, cwd=root)
    assert explained.returncode == 0, explained.stderr
    verdict = "denied" if effect == "deny" else "redacted"
    assert f"{SECTION} (Section): {verdict}" in explained.stdout
    assert "via document type Story" in explained.stdout


def test_policy_test_counts_the_sections_a_story_deny_would_hide(
    story_project: tuple[Path, dict[str, str]],
) -> None:
    root, env = story_project
    write(root, ".kg/policies/stories.yaml", policy_file("deny"))
    preview = kg("policy", "test", env=env, cwd=root)
    assert preview.returncode == 0, preview.stderr
    assert "newly denied (3):" in preview.stdout, preview.stdout
    for node_id in (DOCUMENT, SECTION, "section:docs/stories/login-story.md#login-story"):
        assert f"  {node_id}" in preview.stdout
