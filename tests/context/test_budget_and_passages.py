"""Issue 13, item 1: a build fits its token budget (rendering and structured result alike), a
long section shows the passages that answer the task under its heading path, and the whole
node is one call away."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg.config import DEFAULT_TOKEN_BUDGET
from kg.context.fit import structured_tokens
from kg.context.render import estimate_tokens
from kg.context.service import build_context_graph, parse_request
from kg.errors import PolicyDeniedError
from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.graph_queries import get_node
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.runtime import Runtime

FILLER = "The service keeps working as described in the overview of this document. "
ANSWER = "Context graph builds must finish within 60 ms at the 95th percentile."
PRD = f"""# Product requirements

## Non-Functional Requirements

### Performance

{FILLER * 12}

{FILLER * 10}

{ANSWER} This is measured on a graph of one hundred thousand nodes.

{FILLER * 8}

### Security

Every agent token is scoped to one tenant.
"""

SECTION = "section:docs/prd.md#performance"


@pytest.fixture
async def prd(runtime: Runtime) -> Runtime:
    docs = Path(runtime.settings.project_root) / "docs"
    docs.mkdir(parents=True)
    (docs / "prd.md").write_text(PRD, encoding="utf-8")
    await ingest_paths(runtime, ["docs"])
    await runtime.catch_up()
    return runtime


async def test_a_long_section_shows_the_passage_that_answers_under_its_heading_path(
    prd: Runtime,
) -> None:
    graph = await build_context_graph(
        prd, parse_request(anchors=[SECTION], task="how fast must a context graph build be, p95?")
    )
    node = next(n for n in graph.nodes if n.node_id == SECTION)
    assert node.breadcrumb == "Product requirements > Non-Functional Requirements"
    assert node.name == "Performance" and SECTION.startswith("section:docs/prd.md#")
    assert node.partial and ANSWER in node.content
    assert len(node.content) < len(PRD) / 3, "only the matching passages, not the section"
    assert ANSWER in graph.rendering
    assert "Product requirements > Non-Functional Requirements > Performance: " in graph.rendering
    assert "get_node" in graph.rendering, "the rendering says how to get the rest"
    data = json.dumps(graph.to_dict())
    assert '"level"' not in data and '"anchor":' not in data, "the breadcrumb says where it is"


async def test_without_a_task_the_section_opens_at_its_start(prd: Runtime) -> None:
    graph = await build_context_graph(prd, parse_request(anchors=[SECTION]))
    node = next(n for n in graph.nodes if n.node_id == SECTION)
    assert node.partial and node.content.startswith(FILLER.strip()[:40])
    assert ANSWER not in node.content


async def test_the_full_node_is_one_call_away(prd: Runtime) -> None:
    found = await get_node(prd, SECTION)
    assert ANSWER in found.content and found.content_chars == len(found.content)
    assert found.breadcrumb.endswith("Non-Functional Requirements > Performance")


async def test_get_node_keeps_policies(runtime: Runtime) -> None:
    await runtime.store.append(
        runtime.scope,
        "fixture:policies",
        [
            NodeAsserted(node_id="component:vault", node_type="Component", name="Vault",
                         content="VAULT-SECRET", labels=("secret",)),
            NodeAsserted(node_id="document:card", node_type="Document", name="Card data",
                         content="CARD-CONTENT"),
            PolicyDefined(policy_id="policy:deny", name="deny secrets",
                          rule=PolicyRule(effect="deny", labels=("secret",))),
            PolicyDefined(policy_id="policy:redact", name="redact cards",
                          rule=PolicyRule(effect="redact")),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node="document:card",
                         to_node="policy:redact"),
        ],
    )  # fmt: skip
    with pytest.raises(PolicyDeniedError) as denied:
        await get_node(runtime, "component:vault")
    assert "VAULT-SECRET" not in str(denied.value)
    card = await get_node(runtime, "document:card")
    assert card.redacted and "CARD-CONTENT" not in card.model_dump_json()


@pytest.fixture
async def hub(runtime: Runtime) -> Runtime:
    """Forty long sections contained by one hub component."""
    events: list[NodeAsserted | EdgeAsserted] = [
        NodeAsserted(node_id="component:hub", node_type="Component", name="Hub")
    ]
    for i in range(40):
        node_id = f"section:docs/s{i:02}.md#part"
        events.append(
            NodeAsserted(node_id=node_id, node_type="Section", name=f"Part {i}",
                         content=" ".join(f"word{i}x{j}." for j in range(400)))
        )  # fmt: skip
        events.append(
            EdgeAsserted(edge_type="CONTAINS", from_node="component:hub", to_node=node_id)
        )
    await runtime.store.append(runtime.scope, "fixture:long", events)
    await runtime.catch_up()
    return runtime


async def test_the_default_budget_bounds_rendering_and_structured_result(hub: Runtime) -> None:
    """Forty long sections around one anchor: every build stays within its budget in both
    forms, and a bigger budget brings more nodes."""
    sizes = {}
    for budget in (None, 870, 1600):
        request = parse_request(anchors=["component:hub"], token_budget=budget)
        graph = await build_context_graph(hub, request)
        limit = budget or DEFAULT_TOKEN_BUDGET
        assert graph.budget.token_budget == limit and graph.budget.truncated
        assert estimate_tokens(graph.rendering) <= limit
        assert structured_tokens(graph.nodes, graph.edges) <= limit
        assert graph.budget.structured_tokens == structured_tokens(graph.nodes, graph.edges)
        sizes[limit] = len(graph.nodes)
    assert 2 <= sizes[800] < sizes[1600]


async def test_a_small_budget_still_shows_the_best_node_shortened(prd: Runtime) -> None:
    graph = await build_context_graph(
        prd, parse_request(anchors=[SECTION], task="p95 build latency", token_budget=120)
    )
    assert [n.node_id for n in graph.nodes][:1] == [SECTION]
    assert estimate_tokens(graph.rendering) <= 120
    assert structured_tokens(graph.nodes, graph.edges) <= 120


def test_a_shown_node_leaves_out_empty_properties_and_what_its_id_says() -> None:
    """Issue 31: a rule's unset fields and a function's path and symbol cost a structured node
    more tokens than its excerpt; the shown node carries what only the properties say."""
    from datetime import UTC, datetime

    from kg.context.fit import shown_node
    from kg.projections.graph_reader import NodeRow

    rule = NodeRow(
        "directive:.github/copilot-instructions.md#90d5a748", "Directive", "Run the formatter",
        "Run cargo fmt before every commit.",
        {"file": ".github/copilot-instructions.md", "line": 216, "globs": [], "layers": [],
         "source": ".github/copilot-instructions.md:216", "negated": False, "severity": None,
         "description": "", "strength": "MUST", "topics": ["style"]},
        ("Directive",), datetime.now(UTC), (),
    )  # fmt: skip
    node = shown_node(
        rule, redacted=False, score=1.0, reason="match #1", hop=0, chars=400, query=[]
    )
    assert node.properties == {
        "line": 216, "source": ".github/copilot-instructions.md:216", "strength": "MUST",
        "topics": ["style"],
    }  # fmt: skip
    fn = NodeRow(
        "function:src/app/retry.py#backoff", "Function", "backoff", "def backoff(n): ...",
        {"path": "src/app/retry.py", "symbol": "backoff", "start_line": 3, "end_line": 9,
         "signature": "def backoff(n)"},
        ("Function", "Code"), datetime.now(UTC), (),
    )  # fmt: skip
    shown = shown_node(fn, redacted=False, score=1.0, reason="match #1", hop=0, chars=400, query=[])
    assert shown.properties == {"start_line": 3, "end_line": 9, "signature": "def backoff(n)"}


async def test_past_half_the_budget_further_matches_are_pointers_so_more_of_them_fit(
    hub: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: once half the budget is spent and the candidates left would not all fit with
    their text, each further node is shown without text (its id, heading path and reason):
    the budget names more of the sections that answer, and says how to read them."""
    import kg.context.builder as builder
    from kg.context.render import POINTER_HINT

    request = parse_request(anchors=["component:hub"], token_budget=800)

    graph = await build_context_graph(hub, request)
    parts = graph.nodes[1:]  # the hub, a node without content, comes first
    pointers = [n for n in parts if not n.content]
    assert pointers and all(n.partial for n in pointers)
    texts = [bool(n.content) for n in parts]
    assert texts == sorted(texts, reverse=True), "pointers come after every node with text"
    assert POINTER_HINT in graph.rendering
    assert structured_tokens(graph.nodes, graph.edges) <= 800
    assert estimate_tokens(graph.rendering) <= 800

    monkeypatch.setattr(builder, "POINTER_SHARE", 1.0)  # never a pointer
    without = await build_context_graph(hub, request)
    assert all(n.content for n in without.nodes[1:])
    assert len(graph.nodes) > len(without.nodes)


def test_a_long_heading_path_keeps_the_document_title_and_the_parent() -> None:
    from kg.breadcrumbs import shortened

    headings = [
        "docvet - Epic Breakdown: Multi-Style Support & Enrichment Expansion",
        "Epic 35: Enrichment Depth",
        "Correctness & Completeness Rules",
    ]
    short = shortened(headings, 60)
    assert len(short) <= 60
    assert short.startswith("docvet - Epic") and short.endswith("Completeness Rules")
    assert " > \u2026 > " in short, "the heading between is elided, and says so"
    assert (
        shortened(headings[1:], 60)
        == "Epic 35: Enrichment Depth > Correctness & Completeness Rules"
    )
    assert shortened(headings, None) == " > ".join(headings)
    assert len(shortened(["x" * 100], 60)) <= 60
