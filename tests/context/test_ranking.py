"""Issue 13, item 2: the defining section outranks its copies, and copies do not fill the
budget; query_knowledge_graph ranks the same way, and its full-text leg ORs the terms."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.context.service import build_context_graph, parse_request
from kg.graph_queries import query_knowledge_graph
from kg.ingest.service import ingest_paths
from kg.ranking import (
    NONCURRENT_FACTOR,
    UNSTRUCTURED_FLOOR,
    copies_among,
    copy_of,
    in_run_folder,
    noncurrent,
    prior,
    question_parts,
    shingles,
    unstructured_factor,
)
from kg.runtime import Runtime

RETRY = (
    "Webhook deliveries are retried with exponential backoff for up to three days. Each "
    "attempt waits twice as long as the previous one, starting at one minute, and a delivery "
    "that still fails after the last attempt is marked failed and shown in the dashboard."
)


def test_paths_that_mark_copies_drafts_and_archives() -> None:
    assert noncurrent("section:docs/archive/2023/webhooks.md#retries")
    assert noncurrent("document:docs/stories/drafts/1.1.md")
    assert noncurrent("section:docs/stories/1.4.invitations.draft.md#tasks")
    assert noncurrent("section:templates/prd-tmpl.md#goals")
    assert noncurrent("section:node_modules/left-pad/README.md#usage")
    assert noncurrent("document:vendor/github.com/lib/pq/README.md")
    assert noncurrent("section:_bmad-output/stories/2-3-completion.superseded.md#tasks")
    assert noncurrent("section:docs/stories/5-6-search.retired.md#story")
    assert noncurrent("section:_bmad/bmm/workflows/create-story/template.md#story")
    # no product's folder is named: an installed method is told apart by its copies
    assert not noncurrent("section:bmad-core/checklists/story-dod-checklist.md#done")
    assert not noncurrent("section:_bmad/bmm/workflows/dev-story/instructions.md#steps")
    assert not noncurrent("section:_bmad-output/planning-artifacts/prd.md#goals")
    assert not noncurrent("section:docs/deprecations.md#endpoints")
    assert not noncurrent("section:docs/webhooks.md#retries")
    assert not noncurrent("section:docs/templating-engine.md#draft-orders")
    assert not noncurrent("decision:archive")


def test_records_of_work_rank_like_copies() -> None:
    assert prior("section:docs/stories/2.2.jobs.md#tasks--subtasks") == NONCURRENT_FACTOR
    assert prior("section:docs/stories/2.2.jobs.md#completion-notes-list") == NONCURRENT_FACTOR
    assert prior("section:docs/stories/2.2.jobs.md#change-log-1") == NONCURRENT_FACTOR
    assert prior("section:docs/stories/2.2.jobs.md#acceptance-criteria") == 1.0
    assert prior("section:docs/tasks.md#scheduling") == 1.0, "a file named tasks is not one"


def test_a_restatement_is_a_copy_but_a_longer_original_is_not() -> None:
    original = shingles(RETRY)
    quoted = f"As the webhooks page says: {RETRY}"
    assert copy_of(quoted, [("section:a", original)])[0] == "section:a"
    longer = RETRY + " ".join(f"Rule {i} covers case {i * 7} of endpoint {i}." for i in range(40))
    assert copy_of(longer, [("section:a", original)])[0] is None
    assert (
        copy_of("Something else entirely, about invoices and taxes. " * 8, [("s", original)])[0]
        is None
    )


def test_run_snapshot_and_version_folders() -> None:
    assert in_run_folder("specs/013-fix-merge-rules/spec.md")
    assert in_run_folder("website/versioned_docs/version-0.44.0/cli.md")
    assert in_run_folder("notes/2026-02-11/retro.md")
    assert in_run_folder("docs/v1.2/api.md")
    assert not in_run_folder("doc/architecture/decisions/0011-use-sidekiq.md"), "a numbered file"
    assert not in_run_folder("docs/http2/server.md")
    assert not in_run_folder("README.md")


EXTRA = " ".join(f"Endpoint {i} keeps its own queue of {i * 3} deliveries." for i in range(12))


def test_which_of_two_copies_is_the_original() -> None:
    # verbatim copies: the one outside a run folder, then the one nearer the root
    run = [("section:specs/004-hooks/spec.md#retries", RETRY), ("section:docs/hooks.md#r", RETRY)]
    assert copies_among(run) == {
        "section:specs/004-hooks/spec.md#retries": "section:docs/hooks.md#r"
    }
    deep = [("section:site/docs/hooks.md#r", RETRY), ("section:hooks.md#r", RETRY)]
    assert copies_among(deep) == {"section:site/docs/hooks.md#r": "section:hooks.md#r"}
    # a restatement of part of a text is its copy, whichever ranks first
    part = [("section:a.md#r", RETRY), ("section:b.md#r", RETRY + EXTRA)]
    assert copies_among(part) == {"section:a.md#r": "section:b.md#r"}
    # ...unless the longer one cites the shorter one's file: it restates it and adds notes
    cited = [
        ("section:story.md#ac", f"{RETRY}{EXTRA} [Source: b.md#r]"),
        ("section:b.md#r", RETRY),
    ]
    assert copies_among(cited) == {"section:story.md#ac": "section:b.md#r"}
    # three copies: both point at one original, never at each other
    three = [
        ("section:.x/p.md#o", RETRY),
        ("section:.y/q/p.md#o", RETRY),
        ("section:p.md#o", RETRY),
    ]
    assert copies_among(three) == {
        "section:.x/p.md#o": "section:p.md#o",
        "section:.y/q/p.md#o": "section:p.md#o",
    }
    assert copies_among([("section:a.md#x", RETRY), ("section:a.md#y", RETRY)]) == {}, "one file"
    other = "Invoices are issued on the first working day of each month and are payable in 30 days."
    assert copies_among([("section:a.md#x", RETRY), ("section:b.md#y", other * 3)]) == {}


async def test_a_frozen_copy_ranked_first_brings_its_original(runtime: Runtime) -> None:
    """Issue 31: a SpecKit run folder's copy of the living spec matched the question's words
    better (its title says webhooks twice); the build shows the living one and cites the copy."""
    root = Path(runtime.settings.project_root)
    files = {
        "docs/delivery.md": f"# Delivery\n\n## Retry schedule\n\n{RETRY}\n",
        "specs/007-webhook-retries/spec.md": (
            "# Webhook retries spec\n\n## Webhook retries: how long a webhook is retried\n\n"
            f"{RETRY}\n"
        ),
    }
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    await ingest_paths(runtime, ["docs", "specs"])
    task = "how long is a failing webhook retried?"
    graph = await build_context_graph(
        runtime, parse_request(task=task, mode="semantic", token_budget=800)
    )
    ids = [n.node_id for n in graph.nodes]
    living = "section:docs/delivery.md#retry-schedule"
    frozen = (
        "section:specs/007-webhook-retries/spec.md#webhook-retries-how-long-a-webhook-is-retried"
    )
    assert living in ids
    assert frozen not in ids
    assert frozen in next(n for n in graph.nodes if n.node_id == living).copies


async def test_the_defining_section_is_shown_and_its_copies_cited(runtime: Runtime) -> None:
    root = Path(runtime.settings.project_root)
    for path in ("docs/webhooks.md", "docs/archive/webhooks.md", "docs/stories/1.2.webhooks.md"):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        title = "Story 1.2" if "stories" in path else "Webhooks"
        (root / path).write_text(f"# {title}\n\n## Retries\n\n{RETRY}\n", encoding="utf-8")
    await ingest_paths(runtime, ["docs"])
    task = "how long do we keep retrying a failing webhook delivery?"
    graph = await build_context_graph(runtime, parse_request(task=task, mode="semantic"))
    ids = [n.node_id for n in graph.nodes]
    shown = [i for i in ids if i.endswith("#retries")]
    assert len(shown) == 1, "copies do not fill the budget"
    node = next(n for n in graph.nodes if n.node_id == shown[0])
    assert shown == ["section:docs/webhooks.md#retries"] or "archive" not in shown[0]
    assert "section:docs/archive/webhooks.md#retries" not in ids
    assert set(node.copies) >= {"section:docs/archive/webhooks.md#retries"}

    found = await query_knowledge_graph(runtime, task, limit=5)
    hits = [r.node_id for r in found.results]
    assert sum(1 for h in hits if h.endswith("#retries")) == 1
    assert "section:docs/archive/webhooks.md#retries" not in hits


async def test_full_text_matches_a_question_that_lacks_some_words(runtime: Runtime) -> None:
    root = Path(runtime.settings.project_root) / "docs"
    root.mkdir()
    (root / "webhooks.md").write_text(f"# Webhooks\n\n## Retries\n\n{RETRY}\n", encoding="utf-8")
    (root / "billing.md").write_text("# Billing\n\n## Taxes\n\nInvoices add VAT.\n", "utf-8")
    await ingest_paths(runtime, ["docs"])
    found = await query_knowledge_graph(
        runtime, "how many days until the platform gives up on webhook retries", mode="fulltext"
    )
    assert found.results[0].node_id == "section:docs/webhooks.md#retries"


def test_a_multi_part_question_splits_at_its_parts() -> None:
    assert question_parts(
        "When are production deploys allowed, and what do we do if a release goes bad?"
    ) == ["When are production deploys allowed", "what do we do if a release goes bad?"]
    assert question_parts("Do we call a routing service? Why or why not?") == []
    assert question_parts("Can a homeowner pay part of a bill now and the rest later?") == []


async def test_each_part_of_a_question_brings_its_section(runtime: Runtime) -> None:
    docs = Path(runtime.settings.project_root) / "docs"
    docs.mkdir()
    topics = {
        "deploys": "Production deploys happen on weekday mornings after the staging soak.",
        "rollback": "A bad release is rolled back by redeploying the previous image tag.",
    }
    for i in range(12):  # sections about deploys that crowd out the rollback one
        topics[f"deploy-{i}"] = f"Production deploys note {i}: deploys allowed on weekdays {i}."
    body = "\n\n".join(f"## {name}\n\n{text}" for name, text in topics.items())
    (docs / "ops.md").write_text(f"# Ops\n\n{body}\n", encoding="utf-8")
    await ingest_paths(runtime, ["docs"])
    task = "When are production deploys allowed, and what happens when a release is bad?"
    graph = await build_context_graph(
        runtime, parse_request(task=task, mode="semantic", semantic_k=3, max_depth=0)
    )
    ids = [n.node_id for n in graph.nodes]
    assert "section:docs/ops.md#rollback" in ids


async def test_with_a_task_a_hop_about_it_outranks_a_hop_that_is_only_near(
    runtime: Runtime,
) -> None:
    docs = Path(runtime.settings.project_root) / "docs"
    docs.mkdir()
    (docs / "story.md").write_text(
        "# Story 2.5\n\n## Acceptance criteria\n\nDispatch is warned when a technician runs "
        "fifteen minutes late.\n\n## Change log\n\nVersion 0.2 edited by Sam.\n\n"
        "## Late alerts\n\nA late alert fires once per visit; it repeats only after a reset.\n",
        encoding="utf-8",
    )
    await ingest_paths(runtime, ["docs"])
    graph = await build_context_graph(
        runtime,
        parse_request(
            anchors=["document:docs/story.md"],
            task="can a late alert fire again for the same visit?",
            token_budget=100_000,
        ),
    )
    score = {n.node_id: n.score for n in graph.nodes}
    assert score["section:docs/story.md#late-alerts"] > score["section:docs/story.md#change-log"]


def test_a_bigger_budget_takes_more_semantic_matches() -> None:
    def k(**fields: object) -> int:
        return parse_request(task="t", mode="semantic", **fields).anchors_wanted

    assert (k(), k(token_budget=1000), k(token_budget=100_000)) == (16, 20, 24)
    assert k(token_budget=1600, semantic_k=3) == 3


def test_a_long_file_without_headings_ranks_by_its_length_in_passages() -> None:
    transcript = "User: does the lock retry? Assistant: it retries with backoff. " * 60
    assert unstructured_factor("document:chats/2026-03-01.md", transcript) == UNSTRUCTURED_FLOOR
    mid = "word " * 288  # four passages' worth
    assert unstructured_factor("document:notes.md", mid) == pytest.approx(0.5, abs=0.01)
    assert unstructured_factor("document:README.md", "A short preamble.") == 1.0
    assert unstructured_factor("section:docs/prd.md#performance", transcript) == 1.0


async def test_a_long_transcript_matching_a_little_ranks_below_the_section_that_answers() -> None:
    """Issue 31, cause 0: a heading-less chat log quoting the spec matched as well as the spec
    (its best passage is as near); the section that answers comes first."""
    from kg.context.builder import ContextBuilder
    from kg.context.memory_source import MemoryGraph
    from kg.embeddings import HashingEmbedder
    from kg.events import NodeAsserted

    embedder = HashingEmbedder()
    graph = MemoryGraph()
    task = "how long is a failing webhook delivery retried?"
    vector = embedder.embed([task])[0]
    chat = "document:chats/2026-03-01-session.md"
    spec = "section:docs/webhooks.md#retries"
    graph.add_node(
        NodeAsserted(
            node_id=chat, node_type="Document", name="2026-03-01-session",
            content=f"User: {RETRY} Assistant: noted. " * 12,
        )
    )  # fmt: skip
    graph.add_node(NodeAsserted(node_id=spec, node_type="Section", name="Retries", content=RETRY))
    graph.vectors[chat] = list(vector)
    graph.vectors[spec] = [0.95 * x for x in vector]
    built = await ContextBuilder(graph, embedder).build(
        parse_request(mode="semantic", task=task, token_budget=800)
    )
    order = [n.node_id for n in built.nodes]
    assert order[0] == spec, order  # the transcript follows, or is cited as its copy


async def test_a_one_part_question_keeps_twice_the_anchors_as_candidates() -> None:
    """Issue 31: the answer often sits just below the first ``anchors_wanted`` matches once
    copies and long files give way; an explicit ``semantic_k`` stays exact."""
    from kg.context.builder import ContextBuilder
    from kg.context.memory_source import MemoryGraph
    from kg.embeddings import HashingEmbedder
    from kg.events import NodeAsserted

    embedder = HashingEmbedder()
    graph = MemoryGraph()
    task = "how long is a failing webhook delivery retried?"
    vector = embedder.embed([task])[0]
    for i in range(60):
        node_id = f"section:docs/s{i}.md#retries"
        graph.add_node(NodeAsserted(node_id=node_id, node_type="Section", name="R", content="x"))
        graph.vectors[node_id] = [
            (1 - i / 100) * x + 0.01 * (j % (i + 2)) for j, x in enumerate(vector)
        ]
    builder = ContextBuilder(graph, embedder)
    request = parse_request(mode="semantic", task=task, token_budget=800)
    anchors, _ = await builder._semantic_anchors(request, [])
    assert len(anchors) == 2 * request.anchors_wanted
    exact = parse_request(mode="semantic", task=task, token_budget=800, semantic_k=5)
    anchors, _ = await builder._semantic_anchors(exact, [])
    assert len(anchors) == 5
