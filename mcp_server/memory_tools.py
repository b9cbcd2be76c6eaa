"""``kg mcp --memory-compat``: the reference MCP memory server's tools, over the knowledge graph.

Same tool names and argument shapes as ``@modelcontextprotocol/server-memory``
(``create_entities``, ``create_relations``, ``add_observations``, ``delete_entities``,
``delete_observations``, ``delete_relations``, ``read_graph``, ``search_nodes``,
``open_nodes``), so an agent configured for it works unchanged. The differences are the point:
every write is a set of events and its result names the log ``position`` it landed at; writes
from several clients at once never overwrite each other; deletes are retirements (the log keeps
the history); reads are cut to a token budget (an optional ``token_budget`` argument) and say
what they cut (``truncated``); policies apply exactly as to the other tools.
"""

from __future__ import annotations

import inspect
import json
from typing import Annotated, Any

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from kg.events.memory import EntityName, node_id
from kg.memory import read as memory_read
from kg.memory import write as memory_write
from kg.memory.model import (
    MAX_ITEMS,
    Entity,
    ObservationsToAdd,
    ObservationsToDelete,
    Relation,
)
from kg.memory.read import MemoryGraph
from kg.validation import QueryStr
from mcp_server.logs import log
from mcp_server.models import inline_refs
from mcp_server.state import KgContext, guard, metadata_of, runtime_of

Budget = Annotated[
    int | None,
    Field(
        ge=100,
        le=200_000,
        description="Tokens the result may take (kg extension; it says what it cut)",
    ),
]


class EntityOut(BaseModel):
    name: str
    entityType: str
    observations: list[str]
    redacted: bool = Field(default=False, description="Absent unless a policy redacts it")


class RelationOut(BaseModel):
    from_: str = Field(alias="from")
    to: str
    relationType: str


class CutOut(BaseModel):
    entities: int = Field(description="Entities left out by the token budget")
    relations: int = Field(description="Relations left out by the token budget")
    observations: int = Field(description="Observations cut from the first entity to fit")


class GraphOut(BaseModel):
    entities: list[EntityOut]
    relations: list[RelationOut]
    truncated: CutOut
    excludedByPolicy: int = Field(description="Entities a policy withholds, counted only")
    tokenBudget: int
    tokenEstimate: int


class Acknowledged(BaseModel):
    position: int | None = Field(
        description="Log position of this write's last event (null: nothing to write)"
    )
    events: int = Field(description="Events appended")


class EntitiesOut(Acknowledged):
    entities: list[EntityOut] = Field(description="The entities created (new names only)")


class RelationsOut(Acknowledged):
    relations: list[RelationOut] = Field(description="The relations created or deleted")


class AddedOut(BaseModel):
    entityName: str
    addedObservations: list[str]


class ObservationsOut(Acknowledged):
    results: list[AddedOut]


class DeletedOut(Acknowledged):
    success: bool
    message: str


def _result(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    body = text if text is not None else json.dumps(data, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)


def _graph(graph: MemoryGraph) -> CallToolResult:
    data = graph.to_dict()
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return _result(data, f"{text}\n{graph.summary()}")


def _ack(written: memory_write.Written[Any], **data: Any) -> dict[str, Any]:
    return {**data, "position": written.position, "events": written.events}


Entities = Annotated[list[Entity], Field(max_length=MAX_ITEMS)]
Relations = Annotated[list[Relation], Field(max_length=MAX_ITEMS)]
Names = Annotated[list[EntityName], Field(max_length=MAX_ITEMS)]


def _ids(names: list[str]) -> list[str]:
    return [node_id(n) for n in names]


async def create_entities(
    ctx: KgContext, entities: Entities
) -> Annotated[CallToolResult, EntitiesOut]:
    """Create multiple new entities in the knowledge graph"""
    await guard(ctx, "create_entities", _ids([e.name for e in entities]))
    written = await memory_write.create_entities(runtime_of(ctx), entities, metadata_of(ctx))
    await log(ctx, "info", f"created {len(written.value)} entities at {written.position}")
    return _result(_ack(written, entities=[e.model_dump(by_alias=True) for e in written.value]))


async def create_relations(
    ctx: KgContext, relations: Relations
) -> Annotated[CallToolResult, RelationsOut]:
    """Create multiple new relations between entities in the knowledge graph. Relations should
    be in active voice"""
    await guard(ctx, "create_relations", _ids([n for r in relations for n in (r.from_, r.to)]))
    written = await memory_write.create_relations(runtime_of(ctx), relations, metadata_of(ctx))
    return _result(_ack(written, relations=[r.model_dump(by_alias=True) for r in written.value]))


async def add_observations(
    ctx: KgContext,
    observations: Annotated[list[ObservationsToAdd], Field(max_length=MAX_ITEMS)],
) -> Annotated[CallToolResult, ObservationsOut]:
    """Add new observations to existing entities in the knowledge graph"""
    await guard(ctx, "add_observations", _ids([o.entity_name for o in observations]))
    written = await memory_write.add_observations(runtime_of(ctx), observations, metadata_of(ctx))
    return _result(_ack(written, results=[r.model_dump(by_alias=True) for r in written.value]))


async def delete_entities(
    ctx: KgContext,
    entityNames: Annotated[Names, Field(description="An array of entity names to delete")],
) -> Annotated[CallToolResult, DeletedOut]:
    """Delete multiple entities and their associated relations from the knowledge graph"""
    await guard(ctx, "delete_entities", _ids(entityNames))
    written = await memory_write.delete_entities(runtime_of(ctx), entityNames, metadata_of(ctx))
    message = f"Entities deleted successfully ({len(written.value)} retired; the log keeps them)"
    return _result(_ack(written, success=True, message=message))


async def delete_observations(
    ctx: KgContext,
    deletions: Annotated[list[ObservationsToDelete], Field(max_length=MAX_ITEMS)],
) -> Annotated[CallToolResult, DeletedOut]:
    """Delete specific observations from entities in the knowledge graph"""
    await guard(ctx, "delete_observations", _ids([d.entity_name for d in deletions]))
    written = await memory_write.delete_observations(runtime_of(ctx), deletions, metadata_of(ctx))
    message = f"Observations deleted successfully ({written.value} removed)"
    return _result(_ack(written, success=True, message=message))


async def delete_relations(
    ctx: KgContext,
    relations: Annotated[Relations, Field(description="An array of relations to delete")],
) -> Annotated[CallToolResult, DeletedOut]:
    """Delete multiple relations from the knowledge graph"""
    await guard(ctx, "delete_relations", _ids([n for r in relations for n in (r.from_, r.to)]))
    written = await memory_write.delete_relations(runtime_of(ctx), relations, metadata_of(ctx))
    message = f"Relations deleted successfully ({len(written.value)} removed)"
    return _result(_ack(written, success=True, message=message))


async def read_graph(
    ctx: KgContext, token_budget: Budget = None
) -> Annotated[CallToolResult, GraphOut]:
    """Read the entire knowledge graph (kg: the most connected entities first, within a token
    budget; 'truncated' counts what it left out)"""
    await guard(ctx, "read_graph")
    budget = token_budget or memory_read.READ_BUDGET
    return _graph(await memory_read.read_graph(runtime_of(ctx), budget))


async def search_nodes(
    ctx: KgContext,
    query: Annotated[
        QueryStr,
        Field(
            description="The search query to match against entity names, types, and "
            "observation content"
        ),
    ],
    token_budget: Budget = None,
) -> Annotated[CallToolResult, GraphOut]:
    """Search for nodes in the knowledge graph based on a query (kg: best matches first, within
    a token budget)"""
    await guard(ctx, "search_nodes")
    budget = token_budget or memory_read.SEARCH_BUDGET
    return _graph(await memory_read.search_nodes(runtime_of(ctx), query, budget))


async def open_nodes(
    ctx: KgContext,
    names: Annotated[Names, Field(description="An array of entity names to retrieve")],
    token_budget: Budget = None,
) -> Annotated[CallToolResult, GraphOut]:
    """Open specific nodes in the knowledge graph by their names"""
    await guard(ctx, "open_nodes", _ids(names))
    budget = token_budget or memory_read.OPEN_BUDGET
    return _graph(await memory_read.open_nodes(runtime_of(ctx), names, budget))


READS = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
APPENDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
# "Destructive" in the reference's sense: what they remove leaves the graph (not the log).
RETIRES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

TITLES = {
    "create_entities": "Create Entities",
    "create_relations": "Create Relations",
    "add_observations": "Add Observations",
    "delete_entities": "Delete Entities",
    "delete_observations": "Delete Observations",
    "delete_relations": "Delete Relations",
    "read_graph": "Read Graph",
    "search_nodes": "Search Nodes",
    "open_nodes": "Open Nodes",
}


def memory_tools() -> list[Tool]:
    """The nine tools of the reference memory server, as the SDK's ``Tool``."""
    tools: list[tuple[Any, ToolAnnotations]] = [
        (create_entities, APPENDS),
        (create_relations, APPENDS),
        (add_observations, APPENDS),
        (delete_entities, RETIRES),
        (delete_observations, RETIRES),
        (delete_relations, RETIRES),
        (read_graph, READS),
        (search_nodes, READS),
        (open_nodes, READS),
    ]
    built = []
    for fn, hints in tools:
        tool = Tool.from_function(
            fn,
            title=TITLES[fn.__name__],
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=hints,
        )
        tool.parameters = inline_refs(tool.parameters)  # as plain as the reference's schemas
        if tool.fn_metadata.output_schema is not None:
            tool.fn_metadata.output_schema = inline_refs(tool.fn_metadata.output_schema)
        built.append(tool)
    return built
