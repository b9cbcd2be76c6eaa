"""The tools' structured outputs, as pydantic models so ``tools/list`` publishes their schemas.

The graph queries' outputs are the read path's own result models (``kg.read.models``); the
others mirror the application's result objects field for field (``tests/mcp`` checks that no
field is lost). The descriptions are for the agent reading the schema.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from kg.read import models as read_models


class ContextNodeOut(BaseModel):
    node_id: str = Field(description="'{type}:{id}'; use it as an anchor or in node_ids")
    node_type: str = Field(
        default="",
        description="Absent when it is node_id's prefix capitalised ('section:...' is a Section)",
    )
    name: str
    content: str = Field(description="Empty when the node is redacted by policy")
    properties: dict[str, Any] = Field(default_factory=dict, description="Absent when empty")
    labels: list[str] = Field(default_factory=list, description="Absent when empty")
    score: float = Field(description="Relevance: 1.0 for an anchor, decaying per hop")
    reason: str = Field(description="Why the node is here: anchor, hop N from X via EDGE, ...")
    hop: int = Field(default=0, description="Hops from the nearest anchor; absent when 0")
    redacted: bool = Field(default=False, description="Absent unless true")
    breadcrumb: str = Field(
        default="",
        description="The headings above a section (its file is in node_id, its own heading is "
        "name); absent for other nodes and top-level sections",
    )
    partial: bool = Field(
        default=False,
        description="True when content holds only the passages matching the task: get_node "
        "returns the whole text. Absent unless true",
    )
    status: str = Field(
        default="", description="superseded, deprecated, ...: not current. Absent when current"
    )
    superseded_by: list[str] = Field(
        default_factory=list,
        description="Nodes that replace this one: it is not current (no content); absent if none",
    )

    copies: list[str] = Field(
        default_factory=list,
        description="Nodes restating this one, cited instead of shown; absent if none",
    )


class ContextEdgeOut(BaseModel):
    """An edge, named by its type and ends (its id in kg is 'from_node|edge_type|to_node')."""

    edge_type: str
    from_node: str
    to_node: str
    weight: float


class AllowedActionsOut(BaseModel):
    actions: list[str] = Field(description="Operations the policy allows the agent")
    nodes: list[str] = Field(description="Nodes of this graph the grant covers")


class GovernanceOut(BaseModel):
    policies_applied: list[str]
    excluded_by_policy: dict[str, int] = Field(description="Policy id -> nodes it excluded")
    redacted_by_policy: dict[str, int] = Field(description="Policy id -> nodes it redacted")
    excluded_count: int
    redacted_count: int
    sensitive_count: int
    allowed_actions: dict[str, AllowedActionsOut] = Field(description="Policy id -> its grant")


class BudgetOut(BaseModel):
    max_nodes: int
    max_depth: int
    max_edges: int = Field(description="The edge budget applied (default 2 x max_nodes)")
    token_budget: int | None
    nodes_used: int
    edges_used: int
    depth_reached: int
    tokens_used: int
    truncated: bool = Field(description="True when a budget cut nodes or edges off")
    structured_tokens: int = Field(
        default=0, description="Estimated tokens of nodes and edges as JSON (within the budget)"
    )


class ContextDirectiveOut(BaseModel):
    node_id: str
    text: str
    source: str = Field(description="file:line of the rule")


class ContextGraphOut(BaseModel):
    context_graph_id: str = Field(
        description="Pass it to record_context_usage and record_decision (context_graph_ids)"
    )
    mode: str
    nodes: list[ContextNodeOut]
    edges: list[ContextEdgeOut]
    governance: GovernanceOut
    budget: BudgetOut
    as_of_position: int = Field(description="Log position the graph was built at")
    rendering: str = Field(description="Compact Markdown of the graph, ready for a prompt")
    token_estimate: int = Field(description="Estimated tokens of the rendering")
    content_hash: str
    semantic_anchors: list[tuple[str, float]] = Field(
        description="(node_id, similarity) pairs the task text matched"
    )
    embedder: str | None
    warnings: list[str]
    directives: list[ContextDirectiveOut] = Field(
        default_factory=list,
        description="MUST project rules governing the graph's files (also in the rendering); "
        "absent when none",
    )
    behind: int = Field(
        default=0,
        description="Newer log events not projected yet when built (0: current; a warning "
        "says so too); your own writes are always included",
    )


class ContextUsageOut(BaseModel):
    context_graph_id: str
    tool_call_id: str
    usage_type: str
    position: int = Field(description="Log position of the ContextGraphUsed event")
    duplicate: bool = Field(description="True when this tool call's usage was already recorded")


# The graph queries' results are the read path's own models (kg.read.models): one declaration
# for what the application returns, what the CLI prints and what the tools publish.
NodeView = read_models.NodeView
NodeOut = read_models.NodeDetail
EdgeView = read_models.EdgeView
SearchHitOut = read_models.SearchHit
SearchOut = read_models.SearchResults
NeighborOut = read_models.Neighbour
NeighborsOut = read_models.Neighbourhood
PathOut = read_models.GraphPath


class DecisionOut(BaseModel):
    decision_id: str = Field(description="Pass it to trace_decision_lineage")
    node_id: str = Field(description="The decision's node, 'decision:{decision_id}'")
    position: int = Field(description="Log position of the DecisionRecorded event")
    context_graph_ids: list[str]
    informed_by: list[str] = Field(description="Nodes linked to the decision by INFORMED_BY")
    duplicate: bool = False


class LineageStepOut(BaseModel):
    id: str
    kind: str = Field(description="decision, context_graph, node or source")
    label: str
    position: int | None = Field(description="Log position of the event that created it")
    recorded_at: str | None
    actor: str | None
    details: dict[str, Any]


class LineageLinkOut(BaseModel):
    from_id: str
    to_id: str
    relation: str = Field(
        description="INFORMED_BY, CONTAINED, SOURCED_FROM, SUPERSEDES, SHOWN_IN or INFORMED"
    )


class LineageOut(BaseModel):
    decision_id: str
    direction: str
    depth: int
    steps: list[LineageStepOut]
    links: list[LineageLinkOut]
    excluded_by_policy: int


class IngestOut(BaseModel):
    """What an ingest changed (``kg.ingest.report.IngestReport.to_dict``)."""

    changed: list[str]
    unchanged: int
    removed: list[str]
    failed: list[str]
    rejected: list[str]
    unreadable: list[str] = []  # too large, binary or not UTF-8: warnings, not failures
    skipped: dict[str, list[str]] = {}  # source files left out on purpose, by reason
    nodes_asserted: int
    nodes_retired: int
    edges_asserted: int
    edges_retracted: int
    events: int
    first_position: int | None
    last_position: int | None
    projected: int
    embedded: int
    problems: list[str]
    files: int
    seconds: float
    catch_up_seconds: float
    waiting_embeddings: int = 0  # projected without a vector: the embedder was unavailable
    warnings: list[str] = []


class LintProblemOut(BaseModel):
    path: str
    line: int
    message: str
    severity: str


class LintOut(BaseModel):
    errors: int
    warnings: int
    problems: list[LintProblemOut]


class FindingOut(BaseModel):
    value: str
    confidence: float = Field(description="0..1")
    evidence: list[str] = Field(description="What pointed at it (paths, words, manifests)")


class PathLayerOut(BaseModel):
    path: str
    layer: str
    convention: str = Field(description="The path convention that matched")


class DetectedOut(BaseModel):
    layer: str | None = Field(description="The detected layer (1-Presentation ... 7-Deployment)")
    layer_confidence: float
    layer_candidates: list[FindingOut] = Field(description="Every layer with votes, best first")
    topics: list[FindingOut]
    languages: list[FindingOut]
    frameworks: list[FindingOut]
    path_layers: list[PathLayerOut]
    paths: list[str] = Field(description="The files considered (given and from the diff)")
    confidence: float = Field(description="Overall, 0..1; below 0.3 a warning says so")
    warnings: list[str]


class DirectiveOut(BaseModel):
    node_id: str
    strength: str = Field(description="MUST, SHOULD or MAY")
    text: str = Field(description="The rule statement ('[redacted]' when a policy redacts it)")
    source: str = Field(description="file:line of the statement")
    score: float = Field(description="The documented relevance score (kg.directives.score)")
    redacted: bool
    parts: dict[str, float] = Field(description="Each term of the score, before its weight")


class DirectivesDiagnosticsOut(BaseModel):
    layer: str | None
    layer_confidence: float
    topics: list[str]
    confidence: float
    considered: int = Field(description="Directives in the project")
    applicable: int = Field(description="Directives whose scope and relevance fit the task")
    served: int
    cut_by_budget: int
    excluded_by_policy: int
    redacted_by_policy: int
    token_estimate: int
    token_budget: int


class DirectivesOut(BaseModel):
    served_id: str = Field(description="The id of the DirectivesServed event that logged this")
    directives: list[DirectiveOut] = Field(description="MUST first, then SHOULD, then MAY")
    checklist: str = Field(description="Prompt-ready Markdown checklist with file:line sources")
    diagnostics: DirectivesDiagnosticsOut
    detected: DetectedOut
    as_of_position: int
    warnings: list[str]


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every ``$ref`` replaced by its definition (no output model is
    recursive). Clients validate each result against the published output schema, and a
    validator resolving a ``$ref`` per list item (jsonschema, the Python SDK's client) spent a
    quarter of a 128-node context graph's validation time on that alone."""
    definitions = schema.get("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return walk(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {k: walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(item) for item in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result
