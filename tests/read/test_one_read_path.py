"""The read path's boundary, checked on the source: services read only through the reader.

The projected tables are queried only where the read model lives (the projections, search,
the reader's record queries; ingestion's comparison state and the reviewer's audit read
below it on purpose), and no service or shell opens a tenant transaction of its own or takes
the raw projection reader, so none can skip the catch-up, the snapshot or the policies.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECTED = re.compile(
    r"\b(FROM|JOIN|INTO|UPDATE)\s+(kg_nodes|kg_edges|kg_passages|context_graphs|"
    r"context_graph_usage)\b"
)
# Where SQL on the projected tables may live. kg/erasure re-derives and vacuums the rows an
# erasure touched (live and in kept replays): maintenance of the projections, not a read.
SQL_HOMES = (
    "kg/projections/", "kg/read/", "kg/search.py", "kg/db/", "kg/ingest/", "kg/audit/",
    "kg/erasure/",
)  # fmt: skip
# The raw, policy-free ways in: only the read model itself may use them.
RAW = {
    "kg.db.tenancy.tenant_transaction",
    "kg.db.tenancy.tenant_snapshot",
    "kg.projections.graph_reader.GraphReader",
}
SERVICES = (
    "kg/graph_queries.py", "kg/lineage.py", "kg/decisions.py", "kg/context/service.py",
    "kg/context/reproduce.py", "kg/cli/", "mcp_server/", "kg/memory/",
)  # fmt: skip


def sources(*roots: str) -> dict[str, str]:
    found = {}
    for root in roots:
        for path in sorted((ROOT / root).rglob("*.py")):
            found[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    return found


def imported_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_projected_tables_are_queried_only_where_the_read_model_lives() -> None:
    strays = [
        path
        for path, text in sources("kg", "mcp_server", "backfill").items()
        if PROJECTED.search(text) and not path.startswith(SQL_HOMES)
    ]
    assert strays == [], "query the read model through rt.reader() (kg/read) instead"


def test_no_service_or_shell_takes_a_raw_way_into_the_graph() -> None:
    services = {
        path: text
        for path, text in sources("kg", "mcp_server").items()
        if path.startswith(SERVICES)
    }
    assert "kg/graph_queries.py" in services and "mcp_server/tools.py" in services
    raw = {path: imported_names(text) & RAW for path, text in services.items()}
    assert {path: names for path, names in raw.items() if names} == {}


def test_only_the_context_builder_gets_a_snapshots_unchecked_rows() -> None:
    """``Snapshot.graph_reader`` is for the context builder, which applies the policies to
    every node it reaches; the context service hands it over and nothing else touches it."""
    users = sorted(
        path
        for path, text in sources("kg", "mcp_server", "backfill").items()
        if ".graph_reader" in text.replace("kg.projections.graph_reader", "")
        and not path.startswith(("kg/read/", "kg/projections/"))
    )
    assert users == ["kg/context/service.py"]
