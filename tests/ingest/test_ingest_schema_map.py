"""Schema maps: typing documents and sections without changing their ids."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kg.errors import ValidationError
from kg.ingest import DEFAULT_SCHEMA, ParsedDocument, load_schema_map, parse_markdown, parse_text
from kg.ingest.schema_map import glob_to_regex, parse_schema_map

Writer = Callable[[str, str | bytes], Path]


def types(doc: ParsedDocument) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {n.node_id: (n.node_type, n.labels) for n in doc.nodes}


@pytest.mark.parametrize(
    ("relpath", "front_matter", "expected"),
    [
        ("docs/prd.md", "", "PRD"),
        ("PRD-checkout.md", "", "PRD"),  # root level, case-insensitive
        ("docs/adr/0001-use-postgres.md", "", "ADR"),
        ("decisions/adr-0002.md", "", "ADR"),
        ("planning/epics/e1.md", "", "Epic"),
        ("planning/stories/s1.md", "", "Story"),
        ("docs/notes.md", "type: PRD\n", "PRD"),  # front matter type
        ("docs/prd.md", "type: adr\n", "ADR"),  # front matter beats the path
        ("docs/notes.md", "type: memo\n", "Document"),
        ("docs/adr/sub/x.md", "", "Document"),  # `*` does not cross folders
    ],
)
def test_default_document_typing(relpath: str, front_matter: str, expected: str) -> None:
    text = (f"---\n{front_matter}---\n" if front_matter else "") + "# Title\n"
    doc = parse_text(relpath, text, DEFAULT_SCHEMA)
    assert types(doc)[f"document:{relpath}"] == (expected, ("Document",))


def test_default_section_typing_by_heading() -> None:
    text = "# Epic 1: Checkout\n## Story 1.1 pay\n## Storyboard\n## Epics overview\n"
    doc = parse_text("plan.md", text, DEFAULT_SCHEMA)
    assert types(doc) == {
        "document:plan.md": ("Document", ("Document",)),
        "section:plan.md#epic-1-checkout": ("Epic", ("Section",)),
        "section:plan.md#story-11-pay": ("Story", ("Section",)),
        "section:plan.md#storyboard": ("Section", ("Section",)),
        "section:plan.md#epics-overview": ("Section", ("Section",)),
    }


CUSTOM = r"""
version: 1
include_defaults: false
requirement_prefixes: [REQ]
rules:
  - type: Runbook
    paths: ["ops/**"]
  - type: Policy
    front_matter_type: policy
  - type: UseCase
    headings: ['^UC-\d+']
"""


def test_custom_schema_file_is_loaded_and_replaces_defaults(tmp_path: Path, write: Writer) -> None:
    write(".kg/schema.yaml", CUSTOM)
    write("ops/deep/restart.md", "# UC-1 Restart\nneeds REQ-4 and FR-1\n")
    write("docs/prd.md", "---\ntype: policy\n---\n# Epic 2\n")
    schema = load_schema_map(tmp_path)
    assert schema.source.endswith(".kg/schema.yaml")

    runbook = parse_markdown(tmp_path, Path("ops/deep/restart.md"), schema=schema)
    assert types(runbook)["document:ops/deep/restart.md"] == ("Runbook", ("Document",))
    assert types(runbook)["section:ops/deep/restart.md#uc-1-restart"] == ("UseCase", ("Section",))
    reqs = [n.node_id for n in runbook.nodes if n.node_type == "Requirement"]
    assert reqs == ["requirement:REQ-4"]  # FR is not a prefix in this project

    prd = parse_markdown(tmp_path, Path("docs/prd.md"))  # schema=None loads the project's map
    assert types(prd)["document:docs/prd.md"] == ("Policy", ("Document",))
    assert types(prd)["section:docs/prd.md#epic-2"] == ("Section", ("Section",))


def test_include_defaults_appends_builtin_rules(tmp_path: Path, write: Writer) -> None:
    write(
        "kg-schema.yaml",
        "include_defaults: true\nrules:\n  - type: Spec\n    paths: ['**/prd.md']\n",
    )
    schema = load_schema_map(tmp_path)
    assert schema.document_type("docs/prd.md", {}) == "Spec"  # custom rules come first
    assert schema.document_type("docs/adr/1.md", {}) == "ADR"


def test_a_map_adds_to_the_builtin_typing_unless_it_says_otherwise(
    tmp_path: Path, write: Writer
) -> None:
    """Issue 30 item 8: adding `rules:` turned PRD/ADR/Epic/Story/Rule documents into plain
    Documents until `include_defaults: true` was added."""
    write(".kg/schema.yaml", "rules:\n  - type: Runbook\n    paths: ['ops/**']\n")
    schema = load_schema_map(tmp_path)
    assert schema.document_type("ops/restart.md", {}) == "Runbook"
    assert schema.document_type("docs/adr/1.md", {}) == "ADR"
    assert schema.document_type("docs/stories/login.md", {}) == "Story"
    write(".kg/schema.yaml", "labels:\n  - paths: ['docs/legal/**']\n    labels: [secret]\n")
    assert load_schema_map(tmp_path).document_type("docs/prd.md", {}) == "PRD"


def test_no_schema_file_gives_the_default(tmp_path: Path) -> None:
    assert load_schema_map(tmp_path) is DEFAULT_SCHEMA


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("rules: [unclosed\n", "kg-schema.yaml:2: invalid YAML"),
        ("- a list\n", "top level: expected a mapping"),
        ("rulez: []\n", "unknown key(s) ['rulez']"),
        ("version: 2\n", "version: unsupported version 2"),
        ("rules: {type: X}\n", "rules: expected a list of rules"),
        ("rules:\n  - paths: ['*.md']\n", "rules[0].type: None is not a node type name"),
        ("rules:\n  - type: lower\n    paths: ['*.md']\n", "rules[0].type: 'lower'"),
        ("rules:\n  - type: X\n", "rules[0]: a rule needs at least one of"),
        ("rules:\n  - type: X\n    paths: [1]\n", "rules[0].paths: expected a string or a list"),
        ("rules:\n  - type: X\n    headings: ['(']\n", "rules[0].headings[0]: invalid regular"),
        ("rules:\n  - type: X\n    paths: ['*']\n    color: red\n", "rules[0]: unknown key(s)"),
        ("requirement_prefixes: ['F-R']\n", "requirement_prefixes: 'F-R' must be letters"),
        ("include_defaults: maybe\n", "include_defaults: expected true or false"),
    ],
)
def test_malformed_schema_is_a_validation_error_naming_file_and_problem(
    tmp_path: Path, write: Writer, content: str, fragment: str
) -> None:
    write("kg-schema.yaml", content)
    with pytest.raises(ValidationError) as caught:
        load_schema_map(tmp_path)
    message = str(caught.value)
    assert str(tmp_path / "kg-schema.yaml") in message
    assert fragment in message


def test_parse_schema_map_accepts_a_single_string_for_lists() -> None:
    schema = parse_schema_map("rules:\n  - type: Note\n    paths: 'notes/*.md'\n", "inline")
    assert schema.document_type("notes/a.md", {}) == "Note"
    assert schema.document_type("notes/sub/a.md", {}) is None


def test_glob_semantics() -> None:
    assert glob_to_regex("**/prd*.md").fullmatch("prd.md")
    assert glob_to_regex("**/prd*.md").fullmatch("a/b/PRD-v2.md")
    assert not glob_to_regex("**/prd*.md").fullmatch("a/xprd.md")
    assert glob_to_regex("docs/**").fullmatch("docs/a/b.md")
    assert not glob_to_regex("docs/?.md").fullmatch("docs/ab.md")
    assert not glob_to_regex("a.md").fullmatch("aXmd")  # dots are literal


def test_labels_come_from_front_matter_and_from_the_schema_map_by_path() -> None:
    from kg.ingest.markdown import parse_text
    from kg.ingest.schema_map import parse_schema_map

    schema = parse_schema_map(
        "labels:\n  - paths: ['docs/legal/**']\n    labels: [legal, secret]\n", "kg-schema.yaml"
    )
    text = "---\nlabels: [contract, 'not ok!']\n---\n# NDA\n\n## Terms\n"

    doc = parse_text("docs/legal/nda.md", text, schema)

    by_id = {n.node_id: n.labels for n in doc.nodes}
    assert by_id["document:docs/legal/nda.md"] == ("Document", "legal", "secret", "contract")
    assert by_id["section:docs/legal/nda.md#terms"] == ("Section", "legal", "secret", "contract")
    assert [p.message for p in doc.problems] == [
        "front matter label 'not ok!' is not valid: use 1-64 letters, digits, '_', '.', ':' "
        "or '-', starting with a letter or digit"
    ]
    elsewhere = parse_text("docs/prd.md", "# PRD\n", schema)
    assert elsewhere.nodes[0].labels == ("Document",)


def test_the_code_section_chooses_languages_exclusions_and_history() -> None:
    schema = parse_schema_map(
        "code:\n  languages: [python]\n  exclude: ['tests/fixtures/**']\n  history: 50\n", "s.yaml"
    )
    assert (schema.code_languages, schema.code_exclude, schema.code_history) == (
        ("python",),
        ("tests/fixtures/**",),
        50,
    )
    assert schema.code_skip_reason("src/a.py", "python") is None
    assert schema.code_skip_reason("web/a.ts", "typescript") == (
        "language not enabled in the schema map"
    )
    assert schema.code_skip_reason("tests/fixtures/x/a.py", "python") == (
        "excluded by the schema map"
    )


def test_a_bad_code_section_names_the_field_and_the_choices() -> None:
    with pytest.raises(ValidationError, match=r"s.yaml: code.languages: 'cobol' is not supported"):
        parse_schema_map("code:\n  languages: [cobol]\n", "s.yaml")
    with pytest.raises(ValidationError, match=r"s.yaml: code.history: expected a number"):
        parse_schema_map("code:\n  history: lots\n", "s.yaml")
    with pytest.raises(ValidationError, match=r"s.yaml: code: unknown key\(s\) \['paths'\]"):
        parse_schema_map("code:\n  paths: [src]\n", "s.yaml")
