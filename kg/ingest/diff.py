"""What one file's ingestion must append: the difference between its parse and the graph.

Pure functions, no database: :mod:`kg.ingest.state` reads what is projected for a file, this
module compares it with the new parse and returns the events. Ownership is by id: a file owns
its ``document:`` node and the ``section:`` nodes its document CONTAINS, and every edge that
starts at one of them. ``requirement:`` nodes and extracted entities (label ``Entity``) are
shared by every file that mentions them, so a file asserts one only when the graph lacks it and
never retires one itself (the pipeline retires those no edge touches any more). Relationship
edges between entities belong to no one file: :class:`kg.ingest.entities.relations.RelationLedger`
keeps the files that state each one.

Link and requirement edges carry the link as written (``raw``) but not its line number: a line
added at the top of a file would otherwise re-assert every edge below it. ``kg lint`` reports
lines from the parse. Extracted entity edges do carry ``source: "path:line"``: provenance is
what they are for, and only the changed file's own edges move with its lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kg.directives.config import DEFAULT_CONFIG
from kg.directives.model import SHARED
from kg.events import EdgeAsserted, EdgeRetracted, EdgesAsserted, NodeAsserted, NodeRetired
from kg.events.base import DomainEvent
from kg.events.hashing import canonical_json
from kg.events.knowledge import MAX_EDGES_PER_EVENT, AssertedEdge
from kg.ingest.entities.relations import RelationLedger
from kg.ingest.schema_map import SchemaMap
from kg.parsed.model import DOCUMENT, REQUIREMENT, ParsedDocument, ParsedEdge, ParsedNode
from kg.read.entity_names import ENTITY

# Bump when parsing rules change what a file produces, so unchanged files are re-derived.
# 2: section heading path and document status in properties. 3: labels from front matter.
# 4: rule files' directives (kg.directives). 5: directive headings (``### [MUST] ...``) read
# whole, with their own conditions (issue 30 item 4). 6: requirement ids scoped to the
# defining document, defined by list items and table rows too, of any prefix stated as a
# numbered family.
PARSER_VERSION = "6"
SOURCE_KEY = "kg_source"
STREAM_PREFIX = "doc:"
_MAX_STREAM = 500
_EDGE_PROPERTIES = ("raw", "count", "source")  # source: "path:line" of an extracted edge

EdgeKey = tuple[str, str, str]


def stream_id(relpath: str) -> str:
    """The stream holding one file's events: ``doc:{relpath}`` (hashed when too long)."""
    candidate = STREAM_PREFIX + relpath
    if len(candidate) <= _MAX_STREAM:
        return candidate
    return f"{STREAM_PREFIX}sha256:{hashlib.sha256(relpath.encode()).hexdigest()}"


def schema_fingerprint(schema: SchemaMap) -> str:
    """Changes when the schema map would type nodes differently."""
    rules = [
        [r.node_type, list(r.paths), list(r.front_matter_types), list(r.headings)]
        for r in schema.rules
    ]
    labels = [[list(r.paths), list(r.labels)] for r in schema.label_rules]
    fields: dict[str, object] = {"rules": rules, "prefixes": list(schema.requirement_prefixes)}
    if labels:  # absent when unused, so maps without labels keep their fingerprint
        fields["labels"] = labels
    if schema.directives != DEFAULT_CONFIG:  # likewise for the directives' own settings
        fields["directives"] = schema.directives.fingerprint()
    if schema.entities.enabled:  # likewise for entity extraction
        fields["entities"] = schema.entities.fingerprint()
    text = canonical_json(fields)
    if schema.code_languages or schema.code_exclude or schema.code_history != 500:
        code = [list(schema.code_languages), list(schema.code_exclude), schema.code_history]
        text += canonical_json({"code": code})
    return hashlib.sha256(text.encode()).hexdigest()


def file_fingerprint(content_hash: str, schema_fp: str) -> str:
    """Same fingerprint, same nodes and edges: the file can be skipped without parsing."""
    text = f"{PARSER_VERSION}\n{schema_fp}\n{content_hash}"
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class NodeState:
    node_type: str
    name: str
    content: str
    properties: dict[str, Any]
    labels: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EdgeState:
    properties: dict[str, Any]
    weight: float


@dataclass(slots=True)
class ProjectedFile:
    """What the graph holds for one file: its nodes and the edges leaving them."""

    nodes: dict[str, NodeState] = field(default_factory=dict)
    edges: dict[EdgeKey, EdgeState] = field(default_factory=dict)


@dataclass(slots=True)
class FileChange:
    """The events for one file and what they amount to."""

    relpath: str
    removed: bool = False
    events: list[DomainEvent] = field(default_factory=list)
    nodes_asserted: int = 0
    nodes_retired: int = 0
    edges_asserted: int = 0
    edges_retracted: int = 0
    # Requirement nodes this file stopped pointing at: retired later if nothing else does.
    dropped_requirements: set[str] = field(default_factory=set)


def graph_node(node: ParsedNode, source: dict[str, Any] | None) -> NodeState:
    """The state a parsed node is asserted with; the document carries its source fingerprint.

    Parsed properties are already JSON values (front matter is converted by the parser), so
    they compare equal to what jsonb gives back without a round trip through JSON.
    """
    properties = node.properties
    if source is not None:
        properties = {**properties, SOURCE_KEY: source}
    return NodeState(node.node_type, node.name, node.content, properties, node.labels)


def graph_edge(edge: ParsedEdge) -> EdgeState:
    """The kept properties (not the line: see the module docstring) and the weight (a parsed
    ``weight`` property, e.g. a co-change strength, else the edge's own, e.g. an entity's
    mention count)."""
    props = edge.properties
    weight = float(props.get("weight", edge.weight))
    return EdgeState({k: props[k] for k in _EDGE_PROPERTIES if k in props}, weight)


def _is_requirement(node: ParsedNode) -> bool:
    """A node shared by the files that mention it: a requirement id, an extracted entity, or
    the topic and layer nodes of rule files."""
    return (
        node.node_type == REQUIREMENT
        or REQUIREMENT in node.labels
        or ENTITY in node.labels
        or SHARED in node.labels
    )


def _is_owned(node_id: str) -> bool:
    return node_id.startswith(("document:", "section:"))


def diff_file(
    relpath: str,
    parsed: ParsedDocument | None,
    projected: ProjectedFile,
    *,
    source: dict[str, Any] | None,
    known_requirements: set[str],
    reason: str,
    relations: RelationLedger | None = None,
) -> FileChange:
    """The events that turn ``projected`` into ``parsed`` (``None``: the file is gone).

    ``known_requirements`` holds the shared node ids (requirements, entities) the graph has (or
    that an earlier file of this run asserted); ids asserted here are added to it. ``reason``
    goes into NodeRetired. ``relations`` (loaded for the entities this file mentions, before
    and now) turns the file's relationship lines into edge events.
    """
    change = FileChange(relpath, removed=parsed is None)
    wanted: dict[str, NodeState] = {}
    requirements: list[ParsedNode] = []
    edges: dict[EdgeKey, EdgeState] = {}
    claims: dict[EdgeKey, tuple[str, ...]] = {}
    if parsed is not None:
        for node in parsed.nodes:
            if _is_requirement(node):
                requirements.append(node)
            else:
                is_doc = DOCUMENT in node.labels and node.node_id == parsed.document_id
                wanted[node.node_id] = graph_node(node, source if is_doc else None)
        shared = {n.node_id for n in requirements}
        for edge in parsed.edges:
            key = (edge.edge_type, edge.from_node, edge.to_node)
            if edge.from_node in shared:  # entity -> entity: a claim, see RelationLedger
                claims[key] = tuple(edge.properties.get("sources", ()))
            else:
                edges[key] = graph_edge(edge)

    retired = [node_id for node_id in projected.nodes if node_id not in wanted]
    for node_id in sorted(retired):
        change.events.append(NodeRetired(node_id=node_id, reason=reason))
    change.nodes_retired = len(retired)
    for node_id, state in wanted.items():
        if projected.nodes.get(node_id) != state:
            change.events.append(_node_event(node_id, state))
            change.nodes_asserted += 1
    for req in requirements:
        if req.node_id not in known_requirements:
            known_requirements.add(req.node_id)
            change.events.append(_node_event(req.node_id, graph_node(req, None)))
            change.nodes_asserted += 1

    gone = set(retired)
    for key in sorted(projected.edges):
        if key in edges:
            continue
        edge_type, from_node, to_node = key
        if not _is_owned(to_node):
            change.dropped_requirements.add(to_node)
        if from_node in gone or to_node in gone:
            continue  # NodeRetired takes the edge with it
        change.events.append(
            EdgeRetracted(edge_type=edge_type, from_node=from_node, to_node=to_node)
        )
        change.edges_retracted += 1
    new_edges = [
        AssertedEdge(
            edge_type=key[0],
            from_node=key[1],
            to_node=key[2],
            weight=wanted_edge.weight,
            properties=wanted_edge.properties,
        )
        for key, wanted_edge in edges.items()
        if projected.edges.get(key) != wanted_edge
    ]
    change.events += edge_events(new_edges)
    change.edges_asserted += len(new_edges)
    if relations is not None:
        events, asserted, retracted = relations.claim(relpath, claims)
        change.events += events
        change.edges_asserted += asserted
        change.edges_retracted += retracted
    return change


def edge_events(edges: list[AssertedEdge]) -> list[DomainEvent]:
    """The events asserting ``edges``: one :class:`EdgesAsserted` per up to
    :data:`MAX_EDGES_PER_EVENT` of them (a lone edge stays an :class:`EdgeAsserted`). A file's
    edges were two thirds of an ingest's events; per-event costs (hash link, Merkle leaf,
    index entries, decoding) are paid once per file instead."""
    if len(edges) == 1:
        (e,) = edges
        return [
            EdgeAsserted(
                edge_type=e.edge_type,
                from_node=e.from_node,
                to_node=e.to_node,
                weight=e.weight,
                properties=e.properties,
            )
        ]
    step = MAX_EDGES_PER_EVENT
    return [EdgesAsserted(edges=tuple(edges[i : i + step])) for i in range(0, len(edges), step)]


def mentioned_entities(projected: ProjectedFile, parsed: ParsedDocument | None) -> set[str]:
    """Entities the file named before (edges in the graph) or names now: the ones whose
    relationship edges the file may have stated."""
    before = {to for _, _, to in projected.edges if not _is_owned(to)}
    now = {n.node_id for n in parsed.nodes if ENTITY in n.labels} if parsed else set()
    return before | now


def _node_event(node_id: str, state: NodeState) -> NodeAsserted:
    return NodeAsserted(
        node_id=node_id,
        node_type=state.node_type,
        name=state.name,
        content=state.content,
        properties=state.properties,
        labels=state.labels,
    )


def requirement_ids(docs: Iterable[ParsedDocument]) -> set[str]:
    return {n.node_id for d in docs for n in d.nodes if _is_requirement(n)}
