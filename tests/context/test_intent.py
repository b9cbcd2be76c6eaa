"""Code or documents, decided from the task's wording: "why", "what must", "can I" ask for the
documents; "where is X implemented", "which function" ask for code; a build ranks the other
kind lower. In memory: no database needed."""

from __future__ import annotations

import pytest

from kg.context.builder import ContextBuilder
from kg.context.intent import CODE_FACTOR_FOR_DOCS, intent_factor, task_intent
from kg.context.memory_source import MemoryGraph
from kg.context.service import parse_request
from kg.embeddings import HashingEmbedder
from kg.events import NodeAsserted


@pytest.mark.parametrize(
    ("task", "intent"),
    [
        ("Why did we choose Sidekiq for background jobs?", "docs"),
        ("Should I add the bullet gem back?", "docs"),
        ("Can I push straight to main?", "docs"),
        ("What did we decide about retries on lock errors?", "docs"),
        ("Is it OK to enable the power flag in production?", "docs"),
        ("If the registry can't be reached, is it OK to skip the feature?", "docs"),
        ("If the forwarder fails to start, should up exit non-zero?", "docs"),
        ("I need a new flag; can I add it to the global options?", "docs"),
        ("Where is the retry loop implemented?", "code"),
        ("Which function parses the diff hunks?", "code"),
        ("How is the lock file format implemented in Go?", "code"),
        ("What fields end up in the search index?", None),
        ("Why does parse_config call load_schema in which function?", None),
        ("", None),
    ],
)
def test_the_wording_of_a_task_says_what_it_asks_for(task: str, intent: str | None) -> None:
    assert task_intent(task) == intent


def test_only_the_other_kind_is_ranked_lower() -> None:
    code, doc = ("Function", "Code", "python"), ("Section",)
    assert intent_factor(code, "docs") == CODE_FACTOR_FOR_DOCS
    assert intent_factor(doc, "docs") == 1.0
    assert intent_factor(code, "code") == 1.0
    assert intent_factor(doc, "code") < 1.0
    assert intent_factor(code, None) == intent_factor(doc, None) == 1.0


async def test_a_why_question_puts_the_decision_above_code_sharing_its_words() -> None:
    embedder = HashingEmbedder()
    graph = MemoryGraph()
    task = "why do we retry the lock with backoff?"
    vector = embedder.embed([task])[0]
    graph.add_node(
        NodeAsserted(
            node_id="function:src/lock.py#retry_lock",
            node_type="Function",
            name="retry_lock",
            content="def retry_lock(): retry the lock with backoff",
            labels=["Function", "Code", "python"],
        )
    )
    graph.add_node(
        NodeAsserted(
            node_id="section:docs/adr/0003-retries.md#context",
            node_type="Section",
            name="Context",
            content="Lock errors are transient, so we retry with backoff.",
        )
    )
    graph.vectors["function:src/lock.py#retry_lock"] = list(vector)
    graph.vectors["section:docs/adr/0003-retries.md#context"] = [0.9 * x for x in vector]
    built = await ContextBuilder(graph, embedder).build(
        parse_request(mode="semantic", task=task, token_budget=800)
    )
    order = [n.node_id for n in built.nodes]
    assert order.index("section:docs/adr/0003-retries.md#context") < order.index(
        "function:src/lock.py#retry_lock"
    )
