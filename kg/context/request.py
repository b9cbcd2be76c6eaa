"""What an agent asks for: a validated, frozen request (also the MCP tool's input schema)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from kg.config import DEFAULT_TOKEN_BUDGET
from kg.validation import IdStr, QueryStr, ShortStr

Mode = Literal["anchor", "semantic", "policy_first"]
# Ids and texts PostgreSQL can store (no NUL, no lone surrogate), of bounded length.
Ids = Annotated[tuple[IdStr, ...], Field(max_length=1000)]

#: The one declared default token budget (CLI, MCP tool and project config reuse it): a build
#: fits a prompt, and the budget bounds the structured result as much as the rendering.
# Semantic anchors a build asks for by default: one per TOKENS_PER_ANCHOR of its budget, at
# least DEFAULT_K and at most MAX_DEFAULT_K (800 tokens: 16). Past the first LEAD_NODES, a node
# shows a shorter excerpt (kg.context.fit), so about this many fit; 8 anchors at 800 tokens
# left ~5 sections shown and 0.05 of gold recall on the table (bench/RESULTS.md).
DEFAULT_K = 12
MAX_DEFAULT_K = 24
TOKENS_PER_ANCHOR = 50

# Bounds and defaults of a build, declared once: the request validates with them, the MCP
# tool's signature and the CLI's options reuse them.
DEFAULT_MAX_NODES = 128
DEFAULT_MAX_DEPTH = 2
DEFAULT_MAX_CONTENT_CHARS = 4000
Anchors = Annotated[Ids, Field(max_length=100)]
MaxNodes = Annotated[int, Field(ge=1, le=1000)]
MaxDepth = Annotated[int, Field(ge=0, le=5)]
MaxEdges = Annotated[int | None, Field(ge=0, le=10_000)]
TokenBudget = Annotated[int | None, Field(ge=1, le=1_000_000)]
MaxContentChars = Annotated[int, Field(ge=0, le=100_000)]
SemanticK = Annotated[int | None, Field(ge=1, le=50)]


def default_mode(anchors: object) -> Mode:
    """The mode when none is asked for: the anchors' neighbourhood if any are given, else the
    nodes matching the task (CLI and MCP tool alike)."""
    return "anchor" if anchors else "semantic"


class ContextRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    anchors: Anchors = Field(default=(), description="Node ids to start from")
    task: QueryStr | None = Field(default=None, description="What the agent is doing")
    mode: Mode = "anchor"
    max_nodes: MaxNodes = DEFAULT_MAX_NODES
    max_depth: MaxDepth = DEFAULT_MAX_DEPTH
    max_edges: MaxEdges = Field(default=None, description="Edge budget (default: 2 x max_nodes)")
    token_budget: TokenBudget = Field(
        default=DEFAULT_TOKEN_BUDGET,
        description="Tokens the rendering and the structured nodes and edges may each take",
    )
    max_content_chars: MaxContentChars = Field(
        default=DEFAULT_MAX_CONTENT_CHARS,
        description="Characters of each node's content in the result; longer content is cut",
    )
    node_types: Ids = Field(default=(), description="Only expand to these types")
    edge_types: Ids = Field(default=(), description="Only follow these edge types")
    policies: Ids = Field(
        default=(), description="Extra policy ids applied to every node of this build"
    )
    include_superseded: bool = Field(
        default=True,
        description="Show superseded or deprecated nodes as such (no content, below their "
        "successor); false leaves them out",
    )
    semantic_k: SemanticK = Field(
        default=None,
        description="Semantic matches used as anchors (default: one per 50 tokens of budget, "
        "between 12 and 24)",
    )

    session_id: ShortStr | None = None
    task_id: ShortStr | None = None

    @property
    def anchors_wanted(self) -> int:
        """``semantic_k``, or by default as many matches as the budget can show."""
        if self.semantic_k is not None:
            return self.semantic_k
        budget = self.token_budget or DEFAULT_TOKEN_BUDGET
        return min(MAX_DEFAULT_K, max(DEFAULT_K, budget // TOKENS_PER_ANCHOR))

    @model_validator(mode="after")
    def _inputs_fit_mode(self) -> ContextRequest:
        if self.mode == "anchor" and not self.anchors:
            raise ValueError("mode 'anchor' needs at least one anchor node id")
        if self.mode == "semantic" and not (self.task and self.task.strip()):
            raise ValueError("mode 'semantic' needs a task text to embed")
        if (
            self.mode == "policy_first"
            and not self.anchors
            and not (self.task and self.task.strip())
        ):
            raise ValueError("mode 'policy_first' needs anchors or a task text")
        return self
