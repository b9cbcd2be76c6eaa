"""Issue 13: what a prompt-sized build spends its budget on. The best two matches show the
passage that answers with context around it; the ones after them a shorter passage, so twice as
many sections fit. A match with no content of its own (a document's title) ranks below the
sections that hold the answer. In memory: no database needed."""

from __future__ import annotations

from kg.context.builder import ContextBuilder
from kg.context.fit import LEAD_NODES, SNIPPET_SHARE, allowance
from kg.context.memory_source import MemoryGraph
from kg.context.service import parse_request
from kg.embeddings import HashingEmbedder
from kg.events import NodeAsserted

TASK = "how long are late alerts for a technician suppressed after they fire?"
SENTENCE = "Late alerts for a technician are suppressed for 30 minutes after they fire. "


def long_text(n: int) -> str:
    """A long section, different from every other ``n`` (so none is a copy of another), with
    the answer in its middle."""
    filler = " ".join(
        f"Paragraph {n}-{i} covers topic {n * 100 + i} for a technician." for i in range(12)
    )
    return f"{filler}\n\n{SENTENCE}\n\n{filler}"


def graph_with(nodes: list[tuple[str, str, str, float]], embedder: HashingEmbedder) -> MemoryGraph:
    """Nodes (id, type, content, similarity to TASK): each vector is the task's scaled toward
    a fixed other direction, so its cosine with the task is about the given similarity."""
    graph = MemoryGraph()
    task = embedder.embed([TASK])[0]
    other = embedder.embed(["unrelated words about invoices and taxes"])[0]
    for node_id, node_type, content, sim in nodes:
        graph.add_node(
            NodeAsserted(node_id=node_id, node_type=node_type, name=node_id, content=content)
        )
        graph.vectors[node_id] = [sim * a + (1 - sim) * b for a, b in zip(task, other, strict=True)]
    return graph


def test_nodes_after_the_lead_get_a_snippet() -> None:
    lead = allowance(800, 4000, 0)
    assert allowance(800, 4000, LEAD_NODES - 1) == lead
    assert allowance(800, 4000, LEAD_NODES) == lead // SNIPPET_SHARE
    assert allowance(None, 4000, 5) == 4000, "no budget: whole content"


async def test_a_budget_shows_more_sections_with_shorter_passages_after_the_lead() -> None:
    embedder = HashingEmbedder()
    nodes = [
        (f"section:docs/s{i}.md#alerts", "Section", long_text(i), 0.95 - i * 0.02) for i in range(8)
    ]
    builder = ContextBuilder(graph_with(nodes, embedder), embedder)
    graph = await builder.build(parse_request(mode="semantic", task=TASK, token_budget=800))

    sections = [n for n in graph.nodes if n.node_id.startswith("section:")]
    assert len(sections) > 5, "more sections than five full excerpts would leave room for"
    lead, tail = sections[:LEAD_NODES], sections[LEAD_NODES:]
    assert all(len(n.content) > len(tail[0].content) for n in lead)
    assert all("suppressed for 30 minutes" in n.content for n in sections), "the answer shows"
    assert graph.budget.tokens_used <= 800 and graph.budget.structured_tokens <= 800


async def test_a_contentless_match_ranks_below_a_section_that_holds_the_answer() -> None:
    embedder = HashingEmbedder()
    nodes = [
        ("document:docs/alerts.md", "Document", "", 0.99),  # its title matches best
        ("section:docs/alerts.md#suppression", "Section", SENTENCE, 0.90),
    ]
    builder = ContextBuilder(graph_with(nodes, embedder), embedder)
    graph = await builder.build(parse_request(mode="semantic", task=TASK, max_depth=0))

    order = [n.node_id for n in graph.nodes]
    assert order == ["section:docs/alerts.md#suppression", "document:docs/alerts.md"]


def test_a_snippet_is_a_quarter_of_the_lead_allowance() -> None:
    """Issue 31: past the lead nodes, a quarter (not a third) of the allowance, so one more
    node fits a 1,600-token build (+0.03 gold recall on a real repository)."""
    assert allowance(1600, 4000, LEAD_NODES) == 200
    assert allowance(800, 4000, LEAD_NODES) == 100
