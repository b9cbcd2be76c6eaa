"""Entities in the ingest event stream, against a real PostgreSQL: shared nodes merged across
files, relationship edges owned jointly by the files stating them, orphans retired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import asyncpg

from kg.config import Scope
from kg.ingest.service import ingest_paths
from kg.projections.digest import table_digest
from kg.runtime import Runtime

SCHEMA = """\
entities:
  presets: [endpoints, events, bold_terms, relationships, glossary]
  bold_terms: APIObject
"""

CHARGES = """\
# Charges

A **Charge** requires a **Customer**. `POST /v1/charges` returns a **Charge**.
"""

REFUNDS = """\
# Refunds

A **Refund** belongs to a **Charge**. A **Charge** requires a **Customer**.
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def graph(
    pool: asyncpg.Pool, scope: Scope
) -> tuple[dict[str, str], dict[tuple[str, str, str], dict[str, Any]]]:
    nodes = await pool.fetch(
        "SELECT node_id, node_type FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND labels @> ARRAY['Entity']",
        scope.tenant_id,
        scope.project_id,
    )
    edges = await pool.fetch(
        "SELECT edge_type, from_node, to_node, properties, weight FROM kg_edges "
        "WHERE tenant_id = $1 AND project_id = $2 AND edge_type <> 'CONTAINS' "
        "AND edge_type <> 'PARENT_OF'",
        scope.tenant_id,
        scope.project_id,
    )
    return (
        {r["node_id"]: r["node_type"] for r in nodes},
        {
            (r["edge_type"], r["from_node"], r["to_node"]): {
                **r["properties"],
                "weight": r["weight"],
            }
            for r in edges
        },
    )


async def test_entities_merge_across_files_and_relations_list_every_source(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {".kg/schema.yaml": SCHEMA, "docs/charges.md": CHARGES, "docs/refunds.md": REFUNDS},
    )
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.problems == []
    nodes, edges = await graph(system_pool, scope)
    assert nodes == {
        "apiobject:charge": "APIObject",
        "apiobject:customer": "APIObject",
        "apiobject:refund": "APIObject",
        "endpoint:POST /v1/charges": "Endpoint",
    }
    requires = edges[("REQUIRES", "apiobject:charge", "apiobject:customer")]
    assert requires["sources"] == ["docs/charges.md:3", "docs/refunds.md:3"]
    mention = edges[("MENTIONS", "section:docs/charges.md#charges", "apiobject:charge")]
    assert mention == {"source": "docs/charges.md:3", "weight": 2.0}
    assert ("RETURNS", "endpoint:POST /v1/charges", "apiobject:charge") in edges

    again = await ingest_paths(runtime, [tmp_path / "docs"])
    assert again.events == 0, "unchanged files are not re-extracted"


async def test_a_changed_file_updates_its_claims_and_orphans_are_retired(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    write(
        tmp_path,
        {".kg/schema.yaml": SCHEMA, "docs/charges.md": CHARGES, "docs/refunds.md": REFUNDS},
    )
    await ingest_paths(runtime, [tmp_path / "docs"])

    # charges.md no longer states the requirement: refunds.md still does.
    write(tmp_path, {"docs/charges.md": "# Charges\n\n`POST /v1/charges` returns a **Charge**.\n"})
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.changed == ["docs/charges.md"]
    _, edges = await graph(system_pool, scope)
    requires = edges[("REQUIRES", "apiobject:charge", "apiobject:customer")]
    assert requires["sources"] == ["docs/refunds.md:3"]

    # refunds.md goes: its claims go with it, and Refund and Customer are named nowhere.
    (tmp_path / "docs/refunds.md").unlink()
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.removed == ["docs/refunds.md"]
    nodes, edges = await graph(system_pool, scope)
    assert set(nodes) == {"apiobject:charge", "endpoint:POST /v1/charges"}
    assert not [k for k in edges if k[0] == "REQUIRES"]
    retired = await system_pool.fetch(
        "SELECT payload->>'node_id' AS id, payload->>'reason' AS reason FROM kg_events "
        "WHERE event_type = 'NodeRetired' AND payload->>'node_id' LIKE 'apiobject:%'"
    )
    assert {r["id"] for r in retired} == {"apiobject:customer", "apiobject:refund"}
    assert all("no file mentions it" in r["reason"] for r in retired)

    # The log is the truth: replayed, the entities and their edges come back the same.
    projected = [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")]
    await runtime.runner.rebuild()
    assert [await table_digest(system_pool, t) for t in ("kg_nodes", "kg_edges")] == projected


async def test_switching_entities_on_and_off_re_derives_unchanged_files(
    runtime: Runtime, system_pool: asyncpg.Pool, scope: Scope, tmp_path: Path
) -> None:
    write(tmp_path, {"docs/charges.md": CHARGES})
    await ingest_paths(runtime, [tmp_path / "docs"])
    assert (await graph(system_pool, scope))[0] == {}
    write(tmp_path, {".kg/schema.yaml": SCHEMA})
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.changed == ["docs/charges.md"]
    assert "apiobject:charge" in (await graph(system_pool, scope))[0]

    # Switched off again: every entity, mention and relationship goes.
    (tmp_path / ".kg/schema.yaml").unlink()
    report = await ingest_paths(runtime, [tmp_path / "docs"])
    assert report.changed == ["docs/charges.md"]
    nodes, edges = await graph(system_pool, scope)
    assert nodes == {}
    assert {k[0] for k in edges} == set(), "no MENTIONS, REQUIRES or RETURNS left"
