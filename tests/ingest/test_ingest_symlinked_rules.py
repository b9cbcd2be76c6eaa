"""A file symlinked to another file of the project is read once, under its own name
(issue 30, item 10): ``AGENTS.md -> CLAUDE.md`` was ingested twice, so its rules were two
documents and every directive was served twice."""

from __future__ import annotations

import asyncpg

from kg.config import Scope
from kg.ingest.service import ingest_paths
from kg.runtime import Runtime

RULES = "# Agent rules\n\n- [MUST] Run the tests before every commit.\n"


async def test_a_symlinked_rule_file_is_ingested_once(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    root = runtime.settings.project_root
    (root / "CLAUDE.md").write_text(RULES, encoding="utf-8")
    (root / "AGENTS.md").symlink_to("CLAUDE.md")

    report = await ingest_paths(runtime, None)

    assert not [p for p in report.problems if p.severity == "error"], report.problems
    rows = await system_pool.fetch(
        "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND (node_id LIKE 'document:%' OR node_type = 'Directive')",
        scope.tenant_id,
        scope.project_id,
    )
    ids = sorted(r["node_id"] for r in rows)
    assert "document:CLAUDE.md" in ids and "document:AGENTS.md" not in ids, ids
    directives = [i for i in ids if i.startswith("directive:")]
    assert len(directives) == 1 and directives[0].startswith("directive:CLAUDE.md"), ids
