"""Rule files to directives, without a database: the template, strengths, scopes, ids, problems."""

from __future__ import annotations

from pathlib import Path

from kg.directives.config import parse_directive_config
from kg.directives.strength import StrengthReader
from kg.ingest import DEFAULT_SCHEMA, parse_text
from kg.ingest.project import discover_markdown

TEMPLATE = """# Error handling

## Metadata
- **Layer**: 2-Application
- **AuthoritativeFor**: errors
- **Topics**: errors, api
- **Severity**: high

## When to Apply
- Raising or handling an exception in a service
- Adding a retry

## Directives
- [MUST] Raise typed exceptions from `app/errors.py`.
- [SHOULD] Name the offending input and the fix in every error message.
- [MAY] Wrap third-party errors in a domain error.
- Never swallow an exception silently.

## Rationale
- Typed errors are testable, so this list item is not a directive.
"""


def directives(relpath: str, text: str) -> list:  # type: ignore[type-arg]
    doc = parse_text(relpath, text, DEFAULT_SCHEMA)
    return [n for n in doc.nodes if n.node_type == "Directive"]


def test_the_rule_template_parses_fully() -> None:
    found = directives("docs/rules/errors.md", TEMPLATE)

    assert [(d.properties["strength"], d.properties["line"]) for d in found] == [
        ("MUST", 14), ("SHOULD", 15), ("MAY", 16), ("MUST", 17),
    ]  # fmt: skip
    first = found[0].properties
    assert first["layers"] == ["2-Application"]
    assert first["authoritative_for"] == ["errors"]
    assert set(first["topics"]) >= {"errors", "api"}
    assert first["severity"] == "high"
    assert first["conditions"] == [
        "Raising or handling an exception in a service",
        "Adding a retry",
    ]
    assert first["source"] == "docs/rules/errors.md:14"
    assert found[0].content == "Raise typed exceptions from `app/errors.py`."
    assert found[3].properties["negated"] is True


def test_rules_link_to_their_topics_and_layers_as_edges() -> None:
    doc = parse_text("docs/rules/errors.md", TEMPLATE, DEFAULT_SCHEMA)
    edges = {(e.edge_type, e.from_node.split("#")[0], e.to_node) for e in doc.edges}

    assert ("AUTHORITATIVE_FOR", "document:docs/rules/errors.md", "topic:errors") in edges
    assert ("APPLIES_TO", "document:docs/rules/errors.md", "layer:2-Application") in edges
    assert ("ABOUT", "document:docs/rules/errors.md", "topic:api") in edges
    first = next(n for n in doc.nodes if n.node_type == "Directive")
    contains = {(e.from_node, e.to_node) for e in doc.edges if e.edge_type == "CONTAINS"}
    assert ("document:docs/rules/errors.md", first.node_id) in contains


def test_ids_survive_reordering_and_change_with_the_text() -> None:
    before = {
        d.content: d.node_id
        for d in directives(
            "AGENTS.md", "- Always run ruff check.\n- Never commit secrets to git.\n"
        )
    }
    after = {
        d.content: d.node_id
        for d in directives(
            "AGENTS.md", "- Never commit secrets to git.\n- Always run ruff check.\n"
        )
    }
    edited = {
        d.content: d.node_id for d in directives("AGENTS.md", "- Always run ruff check --fix.\n")
    }

    assert before == after
    assert edited["Always run ruff check --fix."] not in before.values()


def test_strength_from_markers_keywords_and_imperatives() -> None:
    reader = StrengthReader()

    assert reader.read("[MUST NOT] log tokens").strength == "MUST"
    assert reader.read("[MUST NOT] log tokens").negated
    assert reader.read("Never log tokens.").strength == "MUST"
    assert reader.read("Always pin versions.").strength == "MUST"
    assert reader.read("Do not log tokens.").strength == "MUST"
    assert reader.read("You SHOULD prefer composition.").strength == "SHOULD"
    assert reader.read("You may use pytest -k.").strength == "MAY"
    plain = reader.read("Use tabs for Makefiles.")
    assert (plain.strength, plain.explicit) == ("SHOULD", False)


def test_a_project_can_add_its_own_strength_words() -> None:
    config = parse_directive_config({"strength": {"must": ["mandatory to"]}}, "kg-schema.yaml")

    assert StrengthReader(config).read("It is mandatory to sign commits.").strength == "MUST"


def test_cursor_rules_take_their_scope_from_front_matter_globs() -> None:
    text = (
        '---\ndescription: API handlers\nglobs: src/api/**/*.py, "**/routes/*.py"\n---\n'
        "- Return errors as problem+json.\n"
    )
    (found,) = directives(".cursor/rules/api.mdc", text)

    assert found.properties["globs"] == ["src/api/**/*.py", "**/routes/*.py"]
    assert found.properties["description"] == "API handlers"
    assert found.properties["condition_topics"] == ["api"]


def test_an_applies_to_line_scopes_its_section() -> None:
    text = (
        "# Rules\n\n## Python\n\napplies_to: **/*.py\n\n- Use type hints everywhere.\n\n"
        "## Docs\n\n- Wrap lines at 100 characters.\n"
    )
    found = {d.content: d.properties["globs"] for d in directives("AGENTS.md", text)}

    assert found == {"Use type hints everywhere.": ["**/*.py"], "Wrap lines at 100 characters.": []}


def test_missing_and_invalid_metadata_fields_are_errors_with_file_and_line() -> None:
    text = (
        "# R\n\n## Metadata\n- **Layer**: Kitchen\n- **Severity**: urgent\n\n"
        "## Directives\n- [MUST] Do the thing properly.\n"
    )
    doc = parse_text("docs/rules/r.md", text, DEFAULT_SCHEMA)
    problems = {(p.line, p.message.split(":")[0]) for p in doc.problems}

    layers = "1-Presentation, 2-Application, 3-Domain, 4-Persistence, 5-Tests, 6-Docs, 7-Deployment"
    assert (4, f"Layer 'Kitchen' is not one of {layers} or '*'") in problems
    assert any(line == 5 and m.startswith("Severity 'urgent'") for line, m in problems)
    assert any(line == 3 and m.startswith("Metadata has no Topics") for line, m in problems)


def test_malformed_front_matter_or_a_bad_glob_skips_the_file_and_says_where() -> None:
    bad_yaml = directives(
        ".cursor/rules/a.mdc", "---\nglobs: [unclosed\n---\n- Never do this at all.\n"
    )
    doc = parse_text(
        ".cursor/rules/b.mdc",
        "---\nglobs: src/{api\n---\n- Never do this at all.\n",
        DEFAULT_SCHEMA,
    )

    assert bad_yaml == []
    assert [n for n in doc.nodes if n.node_type == "Directive"] == []
    assert any(
        p.line == 2 and "never closed" in p.message and "skipped" in p.message for p in doc.problems
    )


def test_a_project_scan_finds_the_rule_files_agents_read(tmp_path: Path) -> None:
    # Hidden folders git tracks are read whole (issue 31): the rule files agents read there,
    # and the other Markdown beside them; git's own folder is not.
    for rel in ("AGENTS.md", ".cursor/rules/api.mdc", ".github/copilot-instructions.md",
                ".github/PULL_REQUEST_TEMPLATE.md", ".git/info.md", "docs/rules/x.md"):  # fmt: skip
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("- Never do that.\n")

    assert discover_markdown(tmp_path) == [
        ".cursor/rules/api.mdc", ".github/PULL_REQUEST_TEMPLATE.md",
        ".github/copilot-instructions.md", "AGENTS.md", "docs/rules/x.md",
    ]  # fmt: skip


def test_prose_paragraphs_without_a_keyword_are_not_directives() -> None:
    found = directives(
        "AGENTS.md",
        "# Guide\n\nThis repository is a FastAPI service.\n\nAll code MUST pass ruff.\n",
    )

    assert [d.content for d in found] == ["All code MUST pass ruff."]


def test_lint_reports_a_must_and_a_must_not_on_the_same_subject_with_both_locations(
    tmp_path: Path,
) -> None:
    from kg.ingest.service import lint_files

    (tmp_path / "AGENTS.md").write_text("# Rules\n\n- Always commit the lockfile.\n")
    (tmp_path / "docs/rules").mkdir(parents=True)
    (tmp_path / "docs/rules/deps.md").write_text(
        "# Deps\n\n- Intro line here.\n- Never commit the lockfile.\n"
    )

    problems = [str(p) for p in lint_files(tmp_path)]

    assert problems == [
        "AGENTS.md:3: conflicting directives: MUST here and MUST NOT at docs/rules/deps.md:4 on "
        "the same subject and scope; keep one of them",
        "docs/rules/deps.md:4: conflicting directives: MUST NOT here and MUST at AGENTS.md:3 on "
        "the same subject and scope; keep one of them",
    ]


SEED_003 = (Path(__file__).parent / "data" / "seed003-api-input.md").read_text()


def test_directive_subsections_of_the_seed_template_are_directives_read_whole() -> None:
    """Issue 30 item 4: ``### [MUST] Validate all input at the boundary`` is a directive, its
    body is part of it, and its ``**When to apply**`` line is its own condition."""
    found = directives("docs/rules/api-input.md", SEED_003)

    headings = [line for line in SEED_003.splitlines() if line.startswith("### [")]
    assert len(found) == len(headings) == 6
    assert [(d.properties["strength"], d.properties["line"]) for d in found] == [
        ("MUST", 15), ("MUST", 23), ("SHOULD", 30), ("SHOULD", 37), ("MAY", 41), ("MUST", 47),
    ]  # fmt: skip
    first = found[0]
    assert first.content.startswith("Validate all input at the boundary")
    assert "422 that names the offending field" in first.content, "the body is read"
    assert first.properties["section"] == "Validate all input at the boundary"
    assert first.properties["conditions"][-1] == (
        "handling user input in an API endpoint or validating a request body"
    )
    assert "Writing or changing an API endpoint handler" in first.properties["conditions"]
    assert found[1].properties["negated"] is True


def test_the_body_under_a_should_heading_is_a_should_whatever_its_words_say() -> None:
    found = directives("docs/rules/api-input.md", SEED_003)

    problem_details = next(d for d in found if "problem details" in d.content)
    assert "Errors must use" in problem_details.content
    assert problem_details.properties["strength"] == "SHOULD"
    assert not any(d.content.startswith("Errors must use") for d in found), "not a MUST of its own"


def test_a_marked_item_inside_a_directive_subsection_is_its_own_directive() -> None:
    text = (
        "# Rules\n\n## Directives\n\n### [SHOULD] Keep handlers thin\n\n"
        "**When to apply**: writing a request handler.\n\n"
        "Handlers parse, call one service function and render.\n\n"
        "- [MUST NOT] Open a database transaction in a handler.\n\n"
        "## Rationale\n\nThin handlers must be easy to test.\n"
    )
    found = directives("docs/rules/handlers.md", text)

    assert [(d.properties["strength"], d.content) for d in found] == [
        ("SHOULD", "Keep handlers thin: Handlers parse, call one service function and render."),
        ("MUST", "Do not open a database transaction in a handler."),
    ]
    assert found[1].properties["negated"] is True
    assert found[1].properties["conditions"] == ["writing a request handler"]
    assert found[1].properties["section"] == "Keep handlers thin"


def test_a_must_not_marker_keeps_its_not_in_the_text_an_agent_is_served() -> None:
    """``[MUST NOT] Name a denied node`` was served under MUST as "Name a denied node": the
    opposite of the rule. The negation the marker carried stays in the statement."""
    reader = StrengthReader()

    assert reader.read("[MUST NOT] Name a policy-denied node.").text == (
        "Do not name a policy-denied node."
    )
    assert reader.read("[SHOULD NOT] use `print` for logs").text == "Do not use `print` for logs"
    assert reader.read("[MUST NOT] MCP tools return raw rows").text == (
        "Do not: MCP tools return raw rows"
    )
    assert reader.read("[MUST NOT] Never log tokens").text == "Never log tokens"
    assert reader.read("[MUST] Log every request").text == "Log every request"
    found = directives("docs/rules/api-input.md", SEED_003)
    assert found[1].content.startswith("Do not trust client-supplied identifiers")
