"""Typed results of the read path's graph queries, shared by the CLI and the MCP tools.

These are the MCP tools' published output schemas too (``mcp_server.models`` re-exports them),
so what the application returns, what the terminal prints and what an agent is promised are
one declaration. Every node in them has passed the policies: denied nodes are absent (only
counted), redacted ones have the shape :func:`kg.policies.redaction.visible` gives them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class NodeView(BaseModel):
    node_id: str
    node_type: str
    name: str = Field(description="'[redacted]' when a policy redacts the node")
    content: str = Field(default="", description="Up to 500 characters; absent when redacted")
    labels: list[str] = Field(default_factory=list)
    redacted: bool


class OutlineEntry(BaseModel):
    """One section (or, in a source file, one class or function) of a document's outline."""

    node_id: str
    name: str = Field(description="Its heading (redacted: the placeholder)")
    level: int = Field(default=0, description="Heading level (2 for ##); 0 for code symbols")


class NodeDetail(NodeView):
    """One node in full (get_node)."""

    content: str = Field(default="", description="The whole text; absent when redacted")
    properties: dict[str, Any] = Field(default_factory=dict)
    breadcrumb: str = Field(default="", description="A section's file and heading path")
    content_chars: int = Field(default=0, description="Length of the whole content")
    outline: list[OutlineEntry] = Field(
        default_factory=list,
        description="A document's sections (a source file's classes and functions) in order, "
        "each with its id for get_node; empty for other nodes",
    )
    outline_truncated: bool = Field(default=False, description="More sections than listed")
    excluded_by_policy: int = Field(default=0, description="Outline entries a policy hid")


class EdgeView(BaseModel):
    edge_type: str
    from_node: str
    to_node: str
    weight: float


class SearchHit(NodeView):
    score: float
    status: str = Field(default="", description="superseded, deprecated, ...; absent if current")
    similarity: float | None = Field(description="Vector similarity, when the vector side matched")


class SearchResults(BaseModel):
    mode: str
    results: list[SearchHit]
    excluded_by_policy: int = Field(description="Matches a policy hid (never shown)")
    embedder: str | None
    warnings: list[str]
    projected_to: int | None = Field(
        default=None, description="Log position the searched graph reflects"
    )
    behind: int = Field(
        default=0,
        description="Newer log events not projected yet when searched (0: current); your own "
        "writes are always included",
    )


class Neighbour(NodeView):
    hop: int


class Neighbourhood(BaseModel):
    node: NodeView
    neighbors: list[Neighbour]
    edges: list[EdgeView]
    excluded_by_policy: int
    truncated: bool = Field(description="True when the limit cut neighbours off")


class GraphPath(BaseModel):
    source: str
    target: str
    found: bool
    length: int | None = Field(default=None, description="Edges on the path, when found")
    nodes: list[NodeView] = Field(description="From source to target")
    edges: list[EdgeView]
    max_depth: int | None = Field(default=None, description="Depth searched, when not found")


class NodeListing(BaseModel):
    """``kg nodes``: visible nodes per type, or the first nodes of one type."""

    types: dict[str, int]
    nodes: list[NodeView] = Field(default_factory=list)
    excluded_by_policy: int = 0
