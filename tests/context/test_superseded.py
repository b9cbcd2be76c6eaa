"""Issue 13, item 5: nothing stale served as current. A superseded decision, and a spec whose
document says it is deprecated or replaced, is shown only as such (or left out), and what
replaces it is preferred."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.context.service import build_context_graph, parse_request
from kg.decisions import record_decision
from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.ingest.markdown import parse_text
from kg.ingest.schema_map import load_schema_map
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.runtime import Runtime


@pytest.fixture
async def decisions(runtime: Runtime) -> Runtime:
    await runtime.store.append(
        runtime.scope,
        "fixture:auth",
        [NodeAsserted(node_id="component:auth", node_type="Component", name="Auth")],
    )
    await runtime.catch_up()
    await record_decision(
        runtime, text="Sessions are stateless JWTs in local storage", decision_id="d1",
        references=["component:auth"],
    )  # fmt: skip
    await record_decision(
        runtime, text="Sessions are httpOnly cookies", decision_id="d2",
        references=["component:auth"], supersedes=["decision:d1"],
    )  # fmt: skip
    await runtime.catch_up()
    return runtime


async def test_a_superseded_decision_is_served_only_as_superseded(decisions: Runtime) -> None:
    graph = await build_context_graph(decisions, parse_request(anchors=["decision:d1"]))
    by_id = {n.node_id: n for n in graph.nodes}
    old, new = by_id["decision:d1"], by_id["decision:d2"]
    assert old.status == "superseded" and old.superseded_by == ("decision:d2",)
    line = next(x for x in graph.rendering.splitlines() if x.startswith("- **decision:d1**"))
    assert old.content == "" and line.endswith("[superseded by decision:d2]")
    assert new.score > old.score and graph.nodes[0].node_id == "decision:d2"
    assert not new.status and "httpOnly" in (new.content + new.name)


async def test_include_superseded_false_leaves_it_out(decisions: Runtime) -> None:
    graph = await build_context_graph(
        decisions, parse_request(anchors=["component:auth"], include_superseded=False)
    )
    ids = [n.node_id for n in graph.nodes]
    assert "decision:d2" in ids and "decision:d1" not in ids
    assert any("left out" in w for w in graph.warnings)


async def test_a_denied_successor_is_never_named(decisions: Runtime) -> None:
    await decisions.store.append(
        decisions.scope,
        "fixture:deny",
        [
            PolicyDefined(policy_id="policy:hide", name="hide",
                          rule=PolicyRule(effect="deny")),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node="decision:d2", to_node="policy:hide"),
        ],
    )  # fmt: skip
    await decisions.catch_up()
    graph = await build_context_graph(decisions, parse_request(anchors=["decision:d1"]))
    old = next(n for n in graph.nodes if n.node_id == "decision:d1")
    assert old.status == "superseded" and old.superseded_by == ()
    data = graph.to_dict()
    data.pop("context_graph_id")  # random hex: it may contain "d2" by chance
    assert "d2" not in json.dumps(data)


ADR_OLD = """# ADR-0003: JWT sessions

## Status

Superseded by [ADR-0005](0005-cookies.md) (2026-06-18)

## Decision

Store a JWT in local storage.
"""
ADR_NEW = """# ADR-0005: Cookie sessions

## Status

Accepted

## Decision

Use httpOnly cookies for web sessions.
"""
DEPRECATED = """---
status: deprecated
---
# Legacy quote service

## Endpoint

POST /quotes returns a price.
"""


def test_status_conventions_are_read_at_ingest(tmp_path: Path) -> None:
    schema = load_schema_map(tmp_path)
    old = {n.node_id: n for n in parse_text("docs/adr/0003-jwt.md", ADR_OLD, schema).nodes}
    decision = old["section:docs/adr/0003-jwt.md#decision"].properties
    assert decision["status"] == "superseded"
    assert decision["superseded_by"] == "document:docs/adr/0005-cookies.md"
    new = {n.node_id: n for n in parse_text("docs/adr/0005-cookies.md", ADR_NEW, schema).nodes}
    assert "status" not in new["section:docs/adr/0005-cookies.md#decision"].properties
    line = parse_text("a.md", "# A\n\n**Status:** Deprecated\n\n## B\n\ntext\n", schema)
    assert all(n.properties.get("status") == "deprecated" for n in line.nodes)
    front = parse_text("b.md", DEPRECATED, schema)
    assert {n.properties.get("status") for n in front.nodes} == {"deprecated"}


async def test_a_superseded_adr_points_to_its_successor(runtime: Runtime) -> None:
    adr = Path(runtime.settings.project_root) / "docs" / "adr"
    adr.mkdir(parents=True)
    (adr / "0003-jwt.md").write_text(ADR_OLD, encoding="utf-8")
    (adr / "0005-cookies.md").write_text(ADR_NEW, encoding="utf-8")
    (adr / "legacy.md").write_text(DEPRECATED, encoding="utf-8")
    await ingest_paths(runtime, ["docs"])
    old = "section:docs/adr/0003-jwt.md#decision"
    legacy = "section:docs/adr/legacy.md#endpoint"
    graph = await build_context_graph(
        runtime, parse_request(anchors=[old, legacy], max_depth=0, token_budget=2000)
    )
    by_id = {n.node_id: n for n in graph.nodes}
    assert by_id[old].status == "superseded" and by_id[old].content == ""
    assert by_id[old].superseded_by == ("document:docs/adr/0005-cookies.md",)
    assert "document:docs/adr/0005-cookies.md" in by_id
    assert by_id[legacy].status == "deprecated" and "POST /quotes" not in graph.rendering
    assert f"**{legacy}**" in graph.rendering and "[deprecated]" in graph.rendering
