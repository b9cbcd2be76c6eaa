"""A wider build brings the small family of its best matches: a question matching an ADR's
consequences is often answered by its context. A prompt-sized build stays matches only, and a
large document's headings are not a family. In memory: no database needed."""

from __future__ import annotations

from kg.context.builder import FAMILY_BUDGET, FAMILY_SIZE, ContextBuilder
from kg.context.memory_source import MemoryGraph
from kg.context.service import parse_request
from kg.embeddings import HashingEmbedder
from kg.events import NodeAsserted, PolicyDefined
from kg.events.policy import PolicyRule
from kg.policies.model import Policy

TASK = "why is the backend one deployable rather than separate services?"
ADR = "section:docs/adr/0001-modular-monolith.md"


def adr_graph(embedder: HashingEmbedder, members: int = 3) -> MemoryGraph:
    """An ADR whose Consequences match the task; its other sections have no vector, so only
    the family can bring them."""
    graph = MemoryGraph()
    task = embedder.embed([TASK])[0]

    def section(slug: str, text: str) -> str:
        node_id = f"{ADR}#{slug}"
        graph.add_node(NodeAsserted(node_id=node_id, node_type="Section", name=slug, content=text))
        return node_id

    title = section("adr-0001", "")
    consequences = section("consequences", "One deployable: services share one release train.")
    graph.vectors[consequences] = list(task)
    graph.add_edge("PARENT_OF", title, consequences, 1.0)
    siblings = ["context"] + [f"note-{i}" for i in range(members - 2)]
    for slug in siblings:
        graph.add_edge("PARENT_OF", title, section(slug, f"The {slug} of the decision."), 1.0)
    return graph


async def test_a_wider_build_brings_the_siblings_of_its_best_match() -> None:
    embedder = HashingEmbedder()
    builder = ContextBuilder(adr_graph(embedder), embedder)
    graph = await builder.build(
        parse_request(mode="semantic", task=TASK, token_budget=FAMILY_BUDGET)
    )
    shown = {n.node_id: n for n in graph.nodes}
    context = shown[f"{ADR}#context"]
    assert context.reason == f"beside {ADR}#consequences"
    assert context.score < shown[f"{ADR}#consequences"].score, "below the match it is beside"


async def test_a_prompt_sized_build_shows_matches_and_their_hops_only() -> None:
    embedder = HashingEmbedder()
    builder = ContextBuilder(adr_graph(embedder), embedder)
    graph = await builder.build(
        parse_request(mode="semantic", task=TASK, token_budget=FAMILY_BUDGET - 1)
    )
    assert all(not n.reason.startswith("beside") for n in graph.nodes)


async def test_a_large_document_is_not_a_family() -> None:
    embedder = HashingEmbedder()
    builder = ContextBuilder(adr_graph(embedder, members=FAMILY_SIZE + 1), embedder)
    graph = await builder.build(parse_request(mode="semantic", task=TASK, token_budget=1600))
    assert all(not n.reason.startswith("beside") for n in graph.nodes)


async def test_a_build_without_parent_edges_brings_no_family() -> None:
    embedder = HashingEmbedder()
    builder = ContextBuilder(adr_graph(embedder), embedder)
    graph = await builder.build(
        parse_request(mode="semantic", task=TASK, token_budget=1600, edge_types=["REFERENCES"])
    )
    assert f"{ADR}#context" not in {n.node_id for n in graph.nodes}


async def test_a_denied_sibling_is_not_brought_and_only_counted() -> None:
    embedder = HashingEmbedder()
    graph = adr_graph(embedder)
    deny = PolicyDefined(
        policy_id="policy:hide-context", name="hide the context",
        rule=PolicyRule(effect="deny", node_ids=(f"{ADR}#context",)),
    )  # fmt: skip
    graph.policy_list.append(
        Policy(deny.policy_id, deny.name, deny.rule, graph.project_id, 1, deny.origin, "")
    )
    built = await ContextBuilder(graph, embedder).build(
        parse_request(mode="semantic", task=TASK, token_budget=FAMILY_BUDGET)
    )
    assert f"{ADR}#context" not in {n.node_id for n in built.nodes}
    assert built.governance.excluded_count == 1
