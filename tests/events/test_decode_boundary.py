"""One decode boundary: every reader of the log works on upcast, typed events.

A ``NodeAsserted`` is stored in an older shape (version 1 called ``name`` ``title``); the
current code knows version 2 and an upcaster from 1. The projections, the trail, a context
graph, its reproduction and a decision's lineage all read it as the current event: a reader
that took ``payload["name"]`` by key would break here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from kg.audit.trail import TrailFilter, trail
from kg.audit.verify import verify_tenant
from kg.config import Scope
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.decisions import record_decision
from kg.events import base
from kg.events.hashing import canonical_json
from kg.events.knowledge import NodeAsserted
from kg.lineage import trace_decision_lineage
from kg.runtime import Runtime
from tests.support import append_raw


def title_to_name(payload: dict[str, Any]) -> dict[str, Any]:
    upcast = dict(payload)
    upcast["name"] = upcast.pop("title")
    return upcast


@pytest.fixture
def node_asserted_v2(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(NodeAsserted, "schema_version", 2)
    monkeypatch.setitem(base._UPCASTERS, ("NodeAsserted", 1), title_to_name)


async def test_every_reader_sees_an_old_event_as_the_current_one(
    runtime: Runtime, scope: Scope, node_asserted_v2: None
) -> None:
    old = {"node_id": "component:legacy", "node_type": "Component", "title": "Legacy billing",
           "content": "Invoices the old way.", "properties": {}, "labels": []}  # fmt: skip
    await append_raw(runtime.system_pool, scope, "old", "NodeAsserted", 1, canonical_json(old))
    await runtime.store.append(
        scope, "new", [NodeAsserted(node_id="component:new", node_type="Component", name="New")]
    )

    await runtime.catch_up()
    name = await runtime.system_pool.fetchval(
        "SELECT name FROM kg_nodes WHERE node_id = 'component:legacy'"
    )
    assert name == "Legacy billing"

    whole = [e async for e in trail(runtime.app_pool, scope, TrailFilter())]
    assert whole[0].what == "Component asserted: Legacy billing"

    graph = await build_context_graph(runtime, parse_request(anchors=["component:legacy"]))
    assert [n.name for n in graph.nodes] == ["Legacy billing"]
    reproduction = await reproduce_context_graph(runtime, graph.context_graph_id)
    assert reproduction.recorded_hash == reproduction.reproduced_hash

    decision = await record_decision(
        runtime, text="Keep legacy billing", context_graph_ids=[graph.context_graph_id]
    )
    lineage = await trace_decision_lineage(runtime, decision.decision_id, direction="upstream")
    assert "Legacy billing" in orjson.dumps(lineage).decode()

    assert (await verify_tenant(runtime.system_pool, scope.tenant_id)).ok


READERS = ["kg/projections", "kg/context", "kg/lineage.py", "kg/audit/trail.py", "kg/decisions.py"]


def test_no_reader_takes_fields_from_a_stored_payload_by_key() -> None:
    root = Path(__file__).resolve().parents[2]
    files = [
        f
        for entry in READERS
        for f in ([root / entry] if entry.endswith(".py") else sorted((root / entry).rglob("*.py")))
    ]
    offenders = [
        f"{f.relative_to(root)}:{n}"
        for f in files
        for n, line in enumerate(f.read_text().splitlines(), 1)
        if re.search(r"payload(\[|\.get\()", line)
    ]
    assert files and offenders == [], "read the decoded event (RecordedEvent.event) instead"
