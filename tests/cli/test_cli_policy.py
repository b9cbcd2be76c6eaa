"""Every ``kg`` command applies the same policies as the MCP tools.

Over the shop graph (a node denied by policy, one redacted, and two decisions, one of them
denied: ``tests.shop.decide_over_shop``), each command that reads the graph runs as a real
subprocess and must never print a denied node's name or content, nor the redacted node's
content (``tests/mcp/test_tool_policy.py`` walks every MCP tool over the same graph). Every
command of the CLI is either exercised here or listed as not reading the graph's content, with
the reason: a new command cannot skip the question.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kg.cli.app import COMMANDS, load_command
from kg.runtime import Runtime
from tests.shop import SECRETS
from tests.support import cli_env, kg

READS_THE_GRAPH: dict[str, list[tuple[str, ...]]] = {
    "query": [
        ("query", "vault secret", "--mode", "fulltext"),
        ("query", "vault secret name content"),
        ("query", "vault", "--mode", "semantic"),
        ("query", "card content", "--type", "Document"),
    ],
    "inspect": [("inspect", "component:payments", "--depth", "3"), ("inspect", "component:vault")],
    "context build": [
        ("context", "build", "-a", "component:payments", "--max-depth", "3", "--json"),
        ("context", "build", "-a", "component:vault"),
        ("context", "build", "--task", "vault secret", "--mode", "semantic", "--json"),
        ("context", "build", "-a", "component:checkout", "--mode", "policy_first"),
    ],
    "context node": [
        ("context", "node", "component:vault"),
        ("context", "node", "document:card-data"),
    ],
    "decision record": [
        ("decision", "record", "use the vault", "--ref", "component:vault"),
        ("decision", "record", "again", "--supersedes", "decision:hidden"),
    ],
    "lineage": [
        ("lineage", "decision:open", "--direction", "both"),
        ("lineage", "decision:open", "--direction", "both", "--format", "mermaid"),
        ("lineage", "decision:hidden", "--direction", "both"),
    ],
    "audit report": [
        ("audit", "report", "--decision", "decision:open", "-o", "-"),
        ("audit", "report", "--decision", "decision:hidden", "-o", "-"),
    ],
    "path": [
        ("path", "component:checkout", "component:hsm", "--max-depth", "6"),
        ("path", "component:checkout", "document:card-data", "--json"),
    ],
    "nodes": [("nodes",), ("nodes", "--type", "Component"), ("nodes", "--type", "Document")],
    # For people at a terminal: policy ids, selectors and node ids, never names or content.
    "policy list": [("policy", "list"), ("policy", "list", "--json")],
    "policy explain": [
        ("policy", "explain", "component:vault"),
        ("policy", "explain", "document:card-data", "--json"),
    ],
    "policy test": [("policy", "test")],
    "rules query": [("rules", "query", "--task", "vault secret card", "--json")],
}

# Commands that print no node names or content, and why.
NO_GRAPH_CONTENT = {
    "init", "status", "demo", "db upgrade", "db downgrade", "backfill", "projections status",
    "projections catch-up", "projections rebuild", "projections run", "context use", "mcp",
    "ingest", "sync", "lint", "new", "hooks install", "audit verify", "audit replay",
    "audit context", "server status", "server stop",
    # The client configuration: the interpreter, the project root and scope variables.
    "mcp config",
    # Table and function names it distributes across a Citus cluster.
    "db distribute",
    # Like sync: the files it ingests and their counts, never the graph's content.
    "watch",
    # The reviewer's export of the log as recorded (system role); it is not a graph read and
    # policies govern what agents are given, not what the audit trail holds.
    "audit trail",
    # Keys and checkpoints hold hashes only; a proof carries the proved events as recorded,
    # like the trail.
    "audit keygen", "audit checkpoint", "audit prove",
    # The task's layer, topics and technologies: from the task, paths and manifests only.
    "rules detect",
    # The operator's erasure: prints positions, stream and node ids and digests (never
    # content), on the system role like the trail.
    "erase",
    # Prints counts and the file's own lines it skipped (with their reasons), never the graph.
    "import memory",
}  # fmt: skip


def command_names() -> set[str]:
    names: set[str] = set()

    def walk(command: Any, prefix: str) -> None:
        subcommands = getattr(command, "commands", None)
        if not subcommands or getattr(command, "invoke_without_command", False):
            names.add(prefix)  # a command, or a group that also runs alone (`kg mcp`)
        if not subcommands:
            return
        for name, sub in subcommands.items():
            walk(sub, f"{prefix} {name}")

    for name in COMMANDS:
        walk(load_command(name), name)
    return names


def test_every_command_is_either_checked_for_leaks_or_declared_free_of_graph_content() -> None:
    assert command_names() == set(READS_THE_GRAPH) | NO_GRAPH_CONTENT


@pytest.mark.parametrize(
    "argv", [a for runs in READS_THE_GRAPH.values() for a in runs], ids=" ".join
)
async def test_no_command_prints_what_a_policy_withholds(
    decided_shop: Runtime, db_url: str, tmp_path: Path, argv: tuple[str, ...]
) -> None:
    out = kg(*argv, env=cli_env(db_url), cwd=tmp_path)

    printed = out.stdout + out.stderr
    assert "Traceback (most recent call last)" not in printed, printed  # (the report embeds JS)
    for secret in SECRETS:
        assert secret not in printed, f"`kg {' '.join(argv)}` printed {secret}:\n{printed}"
