"""query_directives against a real PostgreSQL: rule files ingested, ranked, budgeted, logged."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kg.audit.trail import TrailFilter, trail
from kg.directives.score import MIN_RELEVANCE, STRENGTH_MARGIN
from kg.errors import NotFoundError, ValidationError
from kg.events import EventMetadata, NodeAsserted, PolicyDefined
from kg.events.directives import DirectivesServed
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.rules.service import detect, query_directives
from kg.runtime import Runtime

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def copy_examples(root: Path) -> None:
    for rel in ("AGENTS.md", ".cursor", "docs/rules"):
        source = EXAMPLES / rel
        if source.is_dir():
            shutil.copytree(source, root / rel, dirs_exist_ok=True)
        else:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, root / rel)


@pytest.fixture
async def rules(runtime: Runtime) -> Runtime:
    copy_examples(runtime.settings.project_root)
    report = await ingest_paths(runtime, None)
    assert not [p for p in report.problems if p.severity == "error"], report.problems
    return runtime


async def test_a_migration_task_gets_the_migration_musts_first_with_file_and_line(
    rules: Runtime,
) -> None:
    served = await query_directives(
        rules, task="add a column to the events table", paths=["migrations/versions/0013_x.py"]
    )

    assert served.detected.layer == "4-Persistence"
    texts = [d["text"] for d in served.directives]
    assert any("Alembic migration" in t for t in texts)
    assert any("UPDATE, DELETE or TRUNCATE" in t for t in texts)
    first = served.directives[0]
    assert first["strength"] == "MUST"
    assert first["source"].startswith((".cursor/rules/migrations.mdc:", "docs/rules/event-store"))
    assert "### MUST" in served.checklist
    assert ".cursor/rules/migrations.mdc:" in served.checklist
    # MCP-tool rules are scoped by globs to mcp_server/: not served for a migration.
    assert not any("MCP client" in t for t in texts)


async def test_the_checklist_names_each_file_once_per_strength_and_fits_its_budget(
    rules: Runtime,
) -> None:
    served = await query_directives(
        rules, task="add a column to the events table", paths=["migrations/versions/0013_x.py"],
        token_budget=150,
    )  # fmt: skip

    lines = served.checklist.splitlines()
    headings = [line for line in lines if line.endswith(":") and not line.startswith("- ")]
    strengths = [line for line in lines if line.startswith("### ")]
    assert len(headings) == len(set(zip(*_groups(lines), strict=True))), "one heading a group"
    for d in served.directives:  # file:line stays recoverable: the line under its file
        file, _, line = d["source"].rpartition(":")
        assert f"{file}:" in headings
        assert f"- L{line} {d['text']}" in lines
    assert strengths == sorted(strengths, key=["### MUST", "### SHOULD", "### MAY"].index)
    assert served.token_estimate == (len(served.checklist) + 3) // 4 <= 150
    assert served.cut_by_budget > 0, "the budget counted the checklist as rendered"


def _groups(lines: list[str]) -> tuple[list[str], list[str]]:
    """(strength, file) of every file heading of a checklist."""
    strengths, files, strength = [], [], ""
    for line in lines:
        if line.startswith("### "):
            strength = line
        elif line.endswith(":") and not line.startswith(("- ", "#", "**")):
            strengths.append(strength)
            files.append(line)
    return strengths, files


async def test_a_may_needs_more_relevance_than_a_must_of_the_same_section(
    runtime: Runtime,
) -> None:
    (runtime.settings.project_root / "AGENTS.md").write_text(
        "# Rules\n\n## Testing helpers and fixtures\n\n- Never mock the database in a test.\n"
        "- You may use hypothesis in a test.\n"
    )
    await ingest_paths(runtime, None)

    served = await query_directives(runtime, task="fix the testing helpers")

    assert [d["strength"] for d in served.directives] == ["MUST"]
    must = served.directives[0]
    relevance = must["score"] - 4.0 * must["parts"]["severity"]
    assert MIN_RELEVANCE <= relevance < MIN_RELEVANCE + STRENGTH_MARGIN["MAY"]


async def test_what_was_served_is_logged_as_an_event(rules: Runtime) -> None:
    served = await query_directives(
        rules, task="write a test", paths=["tests/test_x.py"],
        metadata=EventMetadata(actor="agent-7", session_id="s-1"),
    )  # fmt: skip

    events = await rules.store.read_stream(rules.scope, f"directives:{served.served_id}")
    assert len(events) == 1
    event = events[0].event
    assert isinstance(event, DirectivesServed)
    assert list(event.directive_ids) == [d["node_id"] for d in served.directives]
    assert event.detected["layer"] == "5-Tests"
    assert events[0].meta.actor == "agent-7"


async def test_the_three_most_relevant_musts_are_never_cut_by_the_budget(rules: Runtime) -> None:
    served = await query_directives(
        rules, task="append events in a migration", paths=["migrations/versions/0013_x.py"],
        token_budget=100,
    )  # fmt: skip

    musts = [d for d in served.directives if d["strength"] == "MUST"]
    assert len(musts) == 3
    assert all(d["strength"] == "MUST" for d in served.directives)
    assert served.cut_by_budget > 0
    assert served.diagnostics()["cut_by_budget"] == served.cut_by_budget


async def test_a_denied_directive_is_counted_never_served(rules: Runtime) -> None:
    rule = PolicyRule(effect="deny", node_types=("Directive",), labels=("Directive",))
    await rules.store.append(
        rules.scope,
        "policy:no-rules",
        [PolicyDefined(policy_id="policy:no-rules", name="x", rule=rule)],
    )
    served = await query_directives(rules, task="add a migration", paths=["migrations/a.py"])

    assert served.directives == []
    assert served.excluded_by_policy > 0
    assert "Alembic" not in served.checklist


async def test_no_directives_is_an_error_that_says_how_to_ingest_rules(runtime: Runtime) -> None:
    with pytest.raises(NotFoundError, match=r"AGENTS\.md.*kg ingest"):
        await query_directives(runtime, task="anything")


async def test_a_vague_task_is_served_with_a_prominent_warning(rules: Runtime) -> None:
    served = await query_directives(rules, task="hmm")

    assert served.detected.confidence < 0.3
    assert served.checklist.startswith("**WARNING: LOW CONFIDENCE")


async def test_bad_input_is_a_typed_error_naming_the_field(rules: Runtime) -> None:
    with pytest.raises(ValidationError, match="layer 'Kitchen' is unknown"):
        await query_directives(rules, task="x", layer="Kitchen")
    with pytest.raises(ValidationError, match="outside the project root"):
        await detect(rules, paths=["../../etc/passwd"])
    with pytest.raises(ValidationError, match="token_budget 5 is out of range"):
        await query_directives(rules, task="x", token_budget=5)


async def test_an_agents_md_section_heading_says_when_its_rules_apply(rules: Runtime) -> None:
    served = await query_directives(rules, task="fix a flaky test", paths=["tests/test_x.py"])

    sources = {d["source"].split(":")[0] for d in served.directives}
    assert sources == {"AGENTS.md"}
    assert any("timing assertions" in d["text"] for d in served.directives)
    assert not any("Alembic" in d["text"] for d in served.directives)


async def test_an_unscoped_rule_counts_for_every_layer_like_a_wildcard(runtime: Runtime) -> None:
    root = runtime.settings.project_root
    (root / "AGENTS.md").write_text(
        "# Rules\n\n## Secrets\n\n- Never commit secrets or API keys to the repository.\n"
    )
    (root / "docs/rules").mkdir(parents=True)
    (root / "docs/rules/keys.md").write_text(
        "# Keys\n\n## Metadata\n- **Layer**: *\n- **Topics**: security\n- **Severity**: high\n\n"
        "## When to Apply\n- Secrets\n\n## Directives\n"
        "- [MUST] Never copy secrets or API keys into the repository.\n"
    )
    await ingest_paths(runtime, None)

    served = await query_directives(
        runtime, task="hash the API keys", paths=["api/migrations/versions/0007_keys.py"]
    )

    assert served.detected.layer == "4-Persistence", "a layer neither rule names"
    by_file = {d["source"].split(":")[0]: d["parts"] for d in served.directives}
    assert by_file.keys() == {"AGENTS.md", "docs/rules/keys.md"}, "both served"
    assert by_file["AGENTS.md"]["layer"] == by_file["docs/rules/keys.md"]["layer"] == 1.0


async def test_the_session_trail_shows_which_rules_an_agent_was_given(rules: Runtime) -> None:
    served = await query_directives(
        rules, task="add a migration", paths=["migrations/versions/0013_x.py"],
        metadata=EventMetadata(actor="agent-7", session_id="s-9"),
    )  # fmt: skip

    entries = [e async for e in trail(rules.app_pool, rules.scope, TrailFilter(session="s-9"))]
    assert [e.event_type for e in entries] == ["DirectivesServed"]
    assert entries[0].subject == f"directives:{served.served_id}"
    assert served.directives[0]["node_id"] in entries[0].why


async def directive_rows(rt: Runtime) -> dict[str, tuple[str, dict[str, object]]]:
    """``content -> (node id, properties)`` of the projected directives."""
    async with rt.reader().snapshot() as snap:
        rows = await snap.conn.fetch(
            "SELECT node_id, content, properties FROM kg_nodes WHERE node_type = 'Directive'"
        )
    return {r["content"]: (r["node_id"], dict(r["properties"])) for r in rows}


async def test_an_edited_rule_supersedes_the_old_one_and_reordering_keeps_ids(
    runtime: Runtime,
) -> None:
    agents = runtime.settings.project_root / "AGENTS.md"
    agents.write_text("# Rules\n\n- Never commit secrets to git.\n- Always run ruff check.\n")
    await ingest_paths(runtime, None)
    before = await directive_rows(runtime)
    old_id = before["Never commit secrets to git."][0]

    agents.write_text(
        "# Rules\n\n- Always run ruff check.\n- Never commit secrets or tokens to git.\n"
    )
    report = await ingest_paths(runtime, None)
    after = await directive_rows(runtime)

    assert after["Always run ruff check."][0] == before["Always run ruff check."][0]
    assert report.nodes_retired == 1, "only the edited statement was retired"
    new_id, properties = after["Never commit secrets or tokens to git."]
    assert new_id != old_id
    assert properties["supersedes"] == old_id
    async with runtime.reader().snapshot() as snap:
        edges = await snap.conn.fetch(
            "SELECT to_node FROM kg_edges WHERE from_node = $1 AND edge_type = 'SUPERSEDES'",
            new_id,
        )
    assert [e["to_node"] for e in edges] == [old_id]

    agents.write_text(agents.read_text() + "- Prefer small commits with clear messages.\n")
    await ingest_paths(runtime, None)
    later = await directive_rows(runtime)
    assert later["Never commit secrets or tokens to git."][1]["supersedes"] == old_id


async def test_a_context_graph_carries_the_musts_governing_its_files_within_its_budget(
    rules: Runtime,
) -> None:
    from kg.context.reproduce import reproduce_context_graph
    from kg.context.service import build_context_graph, parse_request

    path = "migrations/versions/0001_event_store.py"
    await rules.store.append(
        rules.scope,
        "file:0001",
        [NodeAsserted(node_id="file:0001", node_type="File", name=path, properties={"path": path})],
    )
    await rules.catch_up()
    request = parse_request(anchors=["file:0001"], token_budget=800)

    graph = await build_context_graph(rules, request)

    texts = [d["text"] for d in graph.directives]
    assert any("UPDATE, DELETE or TRUNCATE" in t for t in texts)
    assert "## Project rules (MUST) for these files" in graph.rendering
    assert "(.cursor/rules/migrations.mdc:7)" in graph.rendering
    assert graph.token_estimate <= 800
    assert graph.budget.token_budget == 800
    sources = {d["source"].split(":")[0] for d in graph.to_dict()["directives"]}
    assert sources == {".cursor/rules/migrations.mdc", "docs/rules/event-store.md"}
    reproduced = await reproduce_context_graph(rules, graph.context_graph_id)
    assert reproduced.matches, str(reproduced)

    plain = await build_context_graph(rules, parse_request(anchors=["document:AGENTS.md"]))
    assert plain.directives == () and "directives" not in plain.to_dict()


@pytest.mark.parametrize(
    ("mode", "anchored", "budget"),
    [("anchor", True, 300), ("semantic", False, 800), ("semantic", False, 300),
     ("policy_first", True, 800), ("policy_first", False, 300)],
)  # fmt: skip
async def test_every_mode_carries_the_musts_of_its_files_inside_its_budget(
    rules: Runtime, mode: str, anchored: bool, budget: int
) -> None:
    from kg.context.reproduce import reproduce_context_graph
    from kg.context.service import build_context_graph, parse_request

    path = "migrations/versions/0001_event_store.py"
    content = "Alembic revision 0001: create the event store table with its triggers."
    await rules.store.append(
        rules.scope,
        "file:0001",
        [NodeAsserted(node_id="file:0001", node_type="File", name=path, content=content,
                      properties={"path": path})],
    )  # fmt: skip
    await rules.catch_up()
    request = parse_request(
        mode=mode, anchors=["file:0001"] if anchored else None, token_budget=budget,
        task="Alembic revision 0001: create the event store table with its triggers",
    )  # fmt: skip

    graph = await build_context_graph(rules, request)

    assert "file:0001" in {n.node_id for n in graph.nodes}, graph.rendering
    sources = {d["source"].split(":")[0] for d in graph.directives}
    assert sources and sources <= {".cursor/rules/migrations.mdc", "docs/rules/event-store.md"}
    if budget >= 800:  # a small budget keeps the most relevant two (a quarter of it)
        assert any("UPDATE, DELETE or TRUNCATE" in d["text"] for d in graph.directives)
    assert "## Project rules (MUST) for these files" in graph.rendering
    assert graph.token_estimate <= budget
    assert graph.budget.tokens_used <= budget
    reproduced = await reproduce_context_graph(rules, graph.context_graph_id)
    assert reproduced.matches, str(reproduced)


async def test_a_decision_names_the_rules_it_followed_and_lineage_shows_them(
    rules: Runtime,
) -> None:
    from kg.decisions import record_decision
    from kg.lineage import trace_decision_lineage

    served = await query_directives(
        rules, task="add a column to the events table", paths=["migrations/versions/0013_x.py"]
    )
    decision = await record_decision(
        rules, text="add the column in a new Alembic revision", context_graph_ids=[served.served_id]
    )
    traced = (await trace_decision_lineage(rules, decision.decision_id, "upstream", 2)).to_dict()

    assert decision.informed_by == tuple(d["node_id"] for d in served.directives)
    trail_of = TrailFilter(decision=decision.decision_id)
    entries = [e async for e in trail(rules.app_pool, rules.scope, trail_of)]
    assert [e.event_type for e in entries] == ["DirectivesServed", "DecisionRecorded"]
    shown = {step["id"] for step in traced["steps"]}
    assert set(decision.informed_by) <= shown
    with pytest.raises(NotFoundError, match="served_id returned by query_directives"):
        await record_decision(rules, text="x", context_graph_ids=["ds_nope"])


async def test_a_policy_attached_to_one_directive_applies_at_once(rules: Runtime) -> None:
    from kg.events import EdgeAsserted

    ask = {"task": "add a migration", "paths": ["migrations/versions/0013_x.py"]}
    before = await query_directives(rules, **ask)  # the directives are now cached
    hidden = before.directives[0]["node_id"]
    rule = PolicyRule(effect="deny", scope="selected")
    await rules.store.append(
        rules.scope,
        "policy:hide-one",
        [
            PolicyDefined(policy_id="policy:hide-one", name="hide one rule", rule=rule),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node=hidden, to_node="policy:hide-one"),
        ],
    )

    after = await query_directives(rules, **ask)

    assert hidden not in [d["node_id"] for d in after.directives]
    assert after.excluded_by_policy == 1
    assert len(after.directives) == len(before.directives) - 1


async def test_a_policy_selecting_a_rule_file_by_path_hides_its_directives(
    rules: Runtime,
) -> None:
    ask = {"task": "add a migration", "paths": ["migrations/versions/0013_x.py"]}
    before = await query_directives(rules, **ask)
    hidden_file = before.directives[0]["file"]
    rule = PolicyRule(effect="deny", paths=(hidden_file,))
    await rules.store.append(
        rules.scope,
        "policy:hide-file",
        [PolicyDefined(policy_id="policy:hide-file", name="hide a rule file", rule=rule)],
    )

    after = await query_directives(rules, **ask)

    assert hidden_file not in {d["file"] for d in after.directives}
    assert after.excluded_by_policy >= sum(d["file"] == hidden_file for d in before.directives)


async def test_a_context_graph_leaves_out_the_musts_of_a_rule_file_a_policy_denies(
    rules: Runtime,
) -> None:
    from kg.context.service import build_context_graph, parse_request

    path = "migrations/versions/0001_event_store.py"
    rule = PolicyRule(effect="deny", paths=(".cursor/rules/migrations.mdc",))
    await rules.store.append(
        rules.scope,
        "file:0001",
        [
            NodeAsserted(node_id="file:0001", node_type="File", name=path,
                         properties={"path": path}),
            PolicyDefined(policy_id="policy:hide-mdc", name="hide a rule file", rule=rule),
        ],
    )  # fmt: skip
    await rules.catch_up()

    graph = await build_context_graph(rules, parse_request(anchors=["file:0001"]))

    sources = {d["source"].split(":")[0] for d in graph.to_dict()["directives"]}
    assert sources == {"docs/rules/event-store.md"}
    assert "migrations.mdc" not in graph.rendering


async def test_a_bad_rules_file_is_reported_and_skipped_and_the_rest_is_ingested(
    runtime: Runtime,
) -> None:
    root = runtime.settings.project_root
    (root / ".cursor/rules").mkdir(parents=True)
    (root / ".cursor/rules/bad.mdc").write_text("---\nglobs: src/{api\n---\n- Never do this.\n")
    (root / "AGENTS.md").write_text(
        "# Rules\n\n## Testing\n\n- Never mock the database in tests.\n"
    )

    report = await ingest_paths(runtime, None)
    served = await query_directives(runtime, task="write a test", paths=["tests/test_a.py"])

    assert [str(p) for p in report.problems] == [
        ".cursor/rules/bad.mdc:2: glob 'src/{api': '{' is never closed; the rules in this "
        "file were skipped"
    ]
    assert [d["text"] for d in served.directives] == ["Never mock the database in tests."]


async def test_a_graph_shows_no_musts_of_a_file_its_budget_left_out(rules: Runtime) -> None:
    """The MUSTs are chosen from the first build's files, then the graph is built again in what
    they leave of the budget; a file that no longer fits takes its MUSTs with it."""
    from kg.context.service import build_context_graph, parse_request

    path = "migrations/versions/0001_event_store.py"
    big = "The event store keeps every change as an event. " * 80
    await rules.store.append(
        rules.scope,
        "fixture:budget",
        [NodeAsserted(node_id="adr:big", node_type="ADR", name="Event store", content=big),
         NodeAsserted(node_id="file:0001", node_type="File", name=path,
                      content="Alembic revision 0001.", properties={"path": path})],
    )  # fmt: skip
    await rules.catch_up()
    dropped = 0
    for budget in range(100, 420, 8):
        graph = await build_context_graph(
            rules, parse_request(anchors=["adr:big", "file:0001"], token_budget=budget)
        )
        if "file:0001" in {n.node_id for n in graph.nodes}:
            continue
        dropped += 1
        assert graph.directives == (), f"budget {budget}: no node of the graph has a file"
        assert "## Project rules (MUST)" not in graph.rendering
    assert dropped, "some budget leaves the file out"


SEED_003 = Path(__file__).resolve().parents[1] / "directives" / "data" / "seed003-api-input.md"


@pytest.fixture
async def seed_rules(runtime: Runtime) -> Runtime:
    """A project whose only rule file is written as the seed-003 template writes them:
    ``### [MUST] ...`` subsections, each with a ``**When to apply**:`` line."""
    target = runtime.settings.project_root / "docs" / "rules" / "api-input.md"
    target.parent.mkdir(parents=True)
    shutil.copy(SEED_003, target)
    report = await ingest_paths(runtime, None)
    assert not [p for p in report.problems if p.severity == "error"], report.problems
    return runtime


async def test_a_must_whose_condition_matches_the_task_is_served_whatever_the_layer(
    seed_rules: Runtime,
) -> None:
    """Issue 30 item 4: the MUST's "When to apply" line is nearly the task's words; layer
    detection guesses 1-Presentation (for "endpoint") while the file says 2-Application."""
    served = await query_directives(
        seed_rules, task="handle user input in an API endpoint and validate the request body"
    )

    assert served.detected.layer != "2-Application", "the case is the layer guessed wrong"
    texts = [d["text"] for d in served.directives]
    assert any(t.startswith("Validate all input at the boundary") for t in texts), texts
    validate = next(d for d in served.directives if d["text"].startswith("Validate all input"))
    assert validate["strength"] == "MUST"
    assert validate["source"] == "docs/rules/api-input.md:15"


async def test_a_condition_match_serves_a_must_not_a_should_or_a_may(seed_rules: Runtime) -> None:
    served = await query_directives(
        seed_rules, task="reject a request at a public endpoint versioned for older clients"
    )

    strengths = {d["text"].split(":")[0]: d["strength"] for d in served.directives}
    assert "Accept unknown fields in lenient mode" not in strengths, strengths
    # The same task with its layer given is scored as before: the layer term, not a bypass.
    with_layer = await query_directives(
        seed_rules, task="reject a request at a public endpoint versioned for older clients",
        layer="2",
    )  # fmt: skip
    assert any(d["strength"] == "SHOULD" for d in with_layer.directives)


async def test_a_strict_layer_still_rules_out_a_must_whose_condition_matches(
    seed_rules: Runtime,
) -> None:
    served = await query_directives(
        seed_rules, task="handle user input in an API endpoint and validate the request body",
        layer="1-Presentation", strict_layer=True,
    )  # fmt: skip

    assert served.directives == []


async def test_a_must_is_served_on_its_condition_alone_when_layer_and_topics_miss(
    runtime: Runtime,
) -> None:
    """No authority, no shared topic, another layer: only the condition says it applies."""
    rules = runtime.settings.project_root / "docs" / "rules" / "outbox.md"
    rules.parent.mkdir(parents=True)
    rules.write_text(
        "# Outbox\n\n## Metadata\n- **Layer**: 3-Domain\n- **Topics**: consistency\n"
        "- **Severity**: high\n\n## Directives\n\n"
        "### [MUST] Send every customer message through the outbox table\n\n"
        "**When to apply**: sending a message to a customer from an HTTP handler.\n\n"
        "The outbox relay delivers it after the transaction commits.\n\n"
        "### [SHOULD] Keep outbox payloads under 64 KB\n\n"
        "**When to apply**: sending a message to a customer from an HTTP handler.\n"
    )
    await ingest_paths(runtime, None)

    served = await query_directives(runtime, task="send a message to a customer from the handler"
                                    " of the HTTP route")  # fmt: skip

    assert served.detected.layer == "1-Presentation"
    assert [(d["strength"], d["text"].split(":")[0]) for d in served.directives] == [
        ("MUST", "Send every customer message through the outbox table")
    ], "the MUST on its condition; the SHOULD still needs its relevance"
    assert served.directives[0]["parts"]["layer"] == 0.0
