"""Issue 13, item 2: the defining section outranks its copies, and copies do not fill the
budget; query_knowledge_graph ranks the same way, and its full-text leg ORs the terms."""

from __future__ import annotations

from pathlib import Path

from kg.context.service import build_context_graph, parse_request
from kg.graph_queries import query_knowledge_graph
from kg.ingest.service import ingest_paths
from kg.ranking import NONCURRENT_FACTOR, copy_of, noncurrent, prior, question_parts, shingles
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
    assert noncurrent("section:bmad-core/checklists/story-dod-checklist.md#done")
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
