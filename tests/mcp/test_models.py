"""The tools' output models lose nothing the application returns (checked field by field, so a
field added to a result object fails here rather than vanishing from the MCP output)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import typing
from collections.abc import Awaitable, Callable
from typing import Any, get_args

import jsonschema
import pytest
from pydantic import BaseModel

from kg import graph_queries, lineage, search
from kg.context.result import Budget, ContextEdge, ContextGraph, ContextNode, GovernanceSummary
from kg.context.service import build_context_graph, parse_request
from kg.decisions import RecordedDecision
from kg.errors import NotFoundError, ValidationError
from kg.runtime import Runtime
from mcp_server import tools
from mcp_server.models import (
    BudgetOut,
    ContextEdgeOut,
    ContextGraphOut,
    ContextNodeOut,
    DecisionOut,
    EdgeView,
    GovernanceOut,
    LineageLinkOut,
    LineageOut,
    LineageStepOut,
    NeighborOut,
    NeighborsOut,
    NodeOut,
    NodeView,
    PathOut,
    SearchHitOut,
    SearchOut,
    inline_refs,
)
from mcp_server.server import create_server


def field_names(cls: type[Any]) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def test_context_graph_models_mirror_the_result_dataclasses() -> None:
    pairs: list[tuple[type[Any], type[BaseModel]]] = [
        (ContextGraph, ContextGraphOut),
        (ContextNode, ContextNodeOut),
        (ContextEdge, ContextEdgeOut),
        (GovernanceSummary, GovernanceOut),
        (Budget, BudgetOut),
        (RecordedDecision, DecisionOut),
        (lineage.LineageStep, LineageStepOut),
        (lineage.LineageLink, LineageLinkOut),
    ]
    for source, model in pairs:
        fields = field_names(source) - ({"edge_id"} if source is ContextEdge else set())
        assert fields == set(model.model_fields), model.__name__
    assert set(lineage.Lineage("decision:x", "upstream", 3).to_dict()) == set(
        LineageOut.model_fields
    )


def test_enumerated_arguments_are_the_applications_own() -> None:
    def choices(fn: Any, name: str) -> tuple[str, ...]:
        annotated = typing.get_type_hints(fn, include_extras=True)[name]
        return get_args(get_args(annotated)[0])  # Annotated[Literal[...], Field(...)]

    assert set(choices(tools.trace_decision_lineage, "direction")) == set(lineage.DIRECTIONS)
    assert set(choices(tools.get_entity_neighbors, "direction")) == set(graph_queries.DIRECTIONS)
    assert set(choices(tools.query_knowledge_graph, "mode")) == set(search.MODES)


async def test_graph_queries_return_the_models_the_tools_publish(shop: Runtime) -> None:
    """One declaration: the application's results are the tools' output models (and the CLI
    prints the same objects), so no field can be lost between them."""
    found = await graph_queries.query_knowledge_graph(shop, "card gateway", limit=5)
    assert type(found) is SearchOut and found.results
    assert all(type(hit) is SearchHitOut for hit in found.results)

    near = await graph_queries.get_entity_neighbors(shop, "component:payments", depth=2)
    assert type(near) is NeighborsOut and type(near.node) is NodeView
    assert near.neighbors and all(type(n) is NeighborOut for n in near.neighbors)
    assert near.edges and all(type(e) is EdgeView for e in near.edges)

    whole = await graph_queries.get_node(shop, "component:payments")
    assert type(whole) is NodeOut and whole.content_chars == len(whole.content)

    for target in ("document:card-data", "component:hsm"):
        path = await graph_queries.find_path(shop, "component:checkout", target)
        assert type(path) is PathOut
        assert all(type(node) is NodeView for node in path.nodes)

    listed = {t.name: t.output_schema for t in await create_server().list_tools()}
    for tool, model in (
        ("query_knowledge_graph", SearchOut),
        ("get_entity_neighbors", NeighborsOut),
        ("get_node", NodeOut),
        ("find_path", PathOut),
    ):
        assert listed[tool] == inline_refs(model.model_json_schema()), tool


async def test_a_context_graph_as_data_is_exactly_its_published_schema(shop: Runtime) -> None:
    """The tool returns ``to_dict()`` unvalidated, so it must be what the schema describes,
    and lose nothing ``dataclasses.asdict`` would have kept: what the lean form leaves out is
    a default (empty properties and labels, redacted false) or derivable (an edge's id, a node's
    type that is its id's prefix capitalised)."""
    graph = await build_context_graph(shop, parse_request(anchors=["component:checkout"]))
    data = graph.to_dict()
    full = json.loads(json.dumps(data))
    for node in full["nodes"]:
        node.setdefault("node_type", node["node_id"].partition(":")[0].capitalize())
        node.setdefault("properties", {})
        node.setdefault("labels", [])
        node.setdefault("hop", 0)
        node.setdefault("redacted", False)
        node.setdefault("breadcrumb", "")
        node.setdefault("partial", False)
        node.setdefault("status", "")
        node.setdefault("superseded_by", [])
        node.setdefault("copies", [])
    for edge in full["edges"]:
        edge["edge_id"] = f"{edge['from_node']}|{edge['edge_type']}|{edge['to_node']}"
    full.setdefault("directives", [])  # no project rules govern these nodes' files
    assert full == json.loads(json.dumps(dataclasses.asdict(graph)))
    lean = ContextGraphOut.model_validate(data).model_dump(mode="json", exclude_defaults=True)
    assert lean["nodes"] == data["nodes"] and lean["edges"] == data["edges"]
    assert any("labels" in n for n in data["nodes"]) and any("redacted" in n for n in data["nodes"])
    assert any("node_type" not in n for n in data["nodes"])  # the lean form is exercised
    listed = {t.name: t.output_schema for t in await create_server().list_tools()}
    jsonschema.validate(data, listed["build_context_graph"])
    assert all("$ref" not in json.dumps(schema) for schema in listed.values())


async def test_published_limits_are_the_applications_own(shop: Runtime) -> None:
    """Each bound in a tool's input schema is where the application function starts to refuse."""
    schemas = {t.name: t.input_schema["properties"] for t in await create_server().list_tools()}
    checkout = "component:checkout"
    cases: list[tuple[str, str, Callable[[int], Awaitable[object]]]] = [
        ("query_knowledge_graph", "limit", lambda v: graph_queries.query_knowledge_graph(
            shop, "gateway", limit=v)),
        ("get_entity_neighbors", "limit", lambda v: graph_queries.get_entity_neighbors(
            shop, checkout, limit=v)),
        ("get_entity_neighbors", "depth", lambda v: graph_queries.get_entity_neighbors(
            shop, checkout, depth=v)),
        ("find_path", "max_depth", lambda v: graph_queries.find_path(
            shop, checkout, "adr:0007", max_depth=v)),
        ("trace_decision_lineage", "depth", lambda v: lineage.trace_decision_lineage(
            shop, "decision:none", depth=v)),
    ]  # fmt: skip
    for tool, argument, run in cases:
        low, high = schemas[tool][argument]["minimum"], schemas[tool][argument]["maximum"]
        for outside in (low - 1, high + 1):
            with pytest.raises(ValidationError):
                await run(outside)
        for inside in (low, high):
            with contextlib.suppress(NotFoundError):  # lineage: in range, no such decision
                await run(inside)


def _bounds(schema: dict[str, Any]) -> tuple[object, object, object]:
    """(minimum, maximum, default) of a property, looking inside ``anyOf`` (optional ints)."""
    parts = [schema, *schema.get("anyOf", [])]
    found = {k: p[k] for p in parts for k in ("minimum", "maximum") if k in p}
    return found.get("minimum"), found.get("maximum"), schema.get("default")


async def test_build_context_graph_publishes_the_requests_own_bounds_and_defaults() -> None:
    """Declared once (kg.context.request): the tool's schema cannot drift from the request's."""
    from kg.context.request import ContextRequest, default_mode

    tools = {t.name: t.input_schema["properties"] for t in await create_server().list_tools()}
    published = tools["build_context_graph"]
    request = ContextRequest.model_json_schema()["properties"]
    for name in ("max_nodes", "max_depth", "max_edges", "max_content_chars", "semantic_k"):
        assert _bounds(published[name]) == _bounds(request[name]), name
    assert _bounds(published["max_nodes"])[1] == 1000
    assert default_mode(()) == "semantic" and default_mode(("a:b",)) == "anchor"
