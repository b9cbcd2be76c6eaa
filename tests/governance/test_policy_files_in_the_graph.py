"""Policy files reach the log as events (only changes, with file:line provenance), their path
selectors govern what every read returns, and people get explanations and previews."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg import graph_queries
from kg.errors import PolicyDeniedError, PolicyFilesError
from kg.events import EventMetadata
from kg.governance.explain import explain_node, preview_policy_files
from kg.governance.sync import apply_policy_files, project_policies
from kg.ingest.service import ingest_paths
from kg.runtime import Runtime
from tests.support import append_raw

META = EventMetadata(actor="kg sync")
POLICY_FILE = ".kg/policies/legal.yaml"
LEGAL = """\
policies:
  - id: legal-hidden
    name: No agent reads legal
    effect: deny
    paths: ["docs/legal/**"]
"""


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def policy_events(rt: Runtime) -> list[tuple[str, str, str | None]]:
    rows = await rt.system_pool.fetch(
        "SELECT event_type, stream_id, metadata->>'source' AS source FROM kg_events "
        "WHERE event_type LIKE 'Policy%' ORDER BY position"
    )
    return [(r["event_type"], r["stream_id"], r["source"]) for r in rows]


async def event_count(rt: Runtime) -> int:
    return int(await rt.system_pool.fetchval("SELECT count(*) FROM kg_events"))


@pytest.fixture
async def project(runtime: Runtime) -> Runtime:
    root = runtime.settings.project_root
    write(root, "docs/legal/nda.md", "# NDA\n\nThe merger with Initech is secret.\n")
    write(root, "docs/prd.md", "# PRD\n\nThe shop sells books.\n")
    await ingest_paths(runtime)
    return runtime


async def test_policy_files_are_appended_as_their_changes_with_file_line_provenance(
    project: Runtime,
) -> None:
    root = project.settings.project_root
    write(root, POLICY_FILE, LEGAL)

    first = await apply_policy_files(project, META)
    again = await apply_policy_files(project, META)

    assert first.defined == ["policy:legal-hidden"] and first.events == 1
    assert again.events == 0, "an unchanged file appends nothing"
    write(root, POLICY_FILE, LEGAL.replace("No agent reads legal", "Legal stays with lawyers"))
    changed = await apply_policy_files(project, META)
    assert changed.changed == ["policy:legal-hidden"]
    (root / POLICY_FILE).unlink()
    retired = await apply_policy_files(project, META)
    assert retired.retired == ["policy:legal-hidden"]

    assert await policy_events(project) == [
        ("PolicyDefined", "policy:legal-hidden", f"{POLICY_FILE}:2"),
        ("PolicyChanged", "policy:legal-hidden", f"{POLICY_FILE}:2"),
        ("PolicyRetired", "policy:legal-hidden", POLICY_FILE),
    ]


async def test_a_policy_file_with_an_error_appends_nothing(project: Runtime) -> None:
    root = project.settings.project_root
    write(root, POLICY_FILE, LEGAL)
    write(root, ".kg/policies/bad.yaml", "policies:\n  - {id: x, effect: forbid, labels: [a]}\n")
    before = await event_count(project)

    with pytest.raises(PolicyFilesError, match=r"\.kg/policies/bad\.yaml:2: ") as raised:
        await apply_policy_files(project, META)

    assert await event_count(project) == before
    assert "nothing new was ingested" in str(raised.value)


async def test_a_path_glob_denies_every_node_of_the_files_it_matches(project: Runtime) -> None:
    write(project.settings.project_root, POLICY_FILE, LEGAL)
    assert (await graph_queries.get_node(project, "section:docs/legal/nda.md#nda")).name

    await apply_policy_files(project, META)

    for node_id in ("document:docs/legal/nda.md", "section:docs/legal/nda.md#nda"):
        with pytest.raises(PolicyDeniedError):
            await graph_queries.get_node(project, node_id)
    found = await graph_queries.query_knowledge_graph(project, "merger Initech secret")
    assert not [r for r in found.results if "docs/legal" in r.node_id]
    assert found.excluded_by_policy >= 1
    assert (await graph_queries.get_node(project, "document:docs/prd.md")).name == "PRD"


async def test_explain_names_the_policy_its_selector_and_since_when(project: Runtime) -> None:
    write(project.settings.project_root, POLICY_FILE, LEGAL)
    await apply_policy_files(project, META)
    position = await project.system_pool.fetchval(
        "SELECT position FROM kg_events WHERE event_type = 'PolicyDefined'"
    )

    found = await explain_node(project, "section:docs/legal/nda.md#nda")

    assert found.exists and found.verdict == "denied"
    (applied,) = found.applied
    assert (applied.policy_id, applied.how, applied.since, applied.origin) == (
        "policy:legal-hidden",
        "path docs/legal/**",
        position,
        POLICY_FILE,
    )
    assert (await explain_node(project, "document:docs/prd.md")).applied == []


async def test_policy_test_shows_what_a_change_would_deny_without_writing(
    project: Runtime, tmp_path: Path
) -> None:
    root = project.settings.project_root
    write(root, POLICY_FILE, LEGAL)
    before = await event_count(project)

    preview = await preview_policy_files(project)

    assert preview.defined == ["policy:legal-hidden"]
    assert preview.newly_denied == ["document:docs/legal/nda.md", "section:docs/legal/nda.md#nda"]
    assert await event_count(project) == before, "a preview writes nothing"

    await apply_policy_files(project, META)
    draft = tmp_path.parent / "draft.yaml"
    draft.write_text(
        "policies:\n  - {id: writers, effect: allow_actions, scope: project, "
        "actions: [write], actors: ['mcp:claude']}\n",
        encoding="utf-8",
    )
    (root / POLICY_FILE).unlink()
    preview = await preview_policy_files(project, [draft])
    assert preview.defined == ["policy:writers"] and preview.retired == ["policy:legal-hidden"]
    assert preview.newly_denied == []
    assert preview.no_longer_denied == [
        "document:docs/legal/nda.md",
        "section:docs/legal/nda.md#nda",
    ]
    assert preview.grants_added == ["policy:writers: mcp:claude may write"]


async def test_a_label_from_front_matter_is_what_a_label_policy_selects(
    runtime: Runtime,
) -> None:
    root = runtime.settings.project_root
    write(root, "docs/salaries.md", "---\nlabels: [secret]\n---\n# Salaries\n\n## Bands\n")
    write(root, POLICY_FILE, "policies:\n  - {id: secrets, effect: redact, labels: [secret]}\n")
    await ingest_paths(runtime)
    await apply_policy_files(runtime, META)

    shown = await graph_queries.get_node(runtime, "section:docs/salaries.md#bands")

    assert shown.redacted is True and shown.name == "[redacted]"
    explained = await explain_node(runtime, "section:docs/salaries.md#bands")
    assert [(a.policy_id, a.how) for a in explained.applied] == [("policy:secrets", "label secret")]


async def test_a_policy_stored_before_v2_decodes_and_projects_as_it_always_did(
    runtime: Runtime,
) -> None:
    v1 = (
        '{"policy_id":"policy:old","name":"Old","description":"",'
        '"rule":{"effect":"deny","actions":[],"node_types":[],"labels":["secret"],'
        '"scope":"selected"}}'
    )
    await append_raw(runtime.app_pool, runtime.scope, "policies", "PolicyDefined", 1, v1)
    await runtime.catch_up()

    stored = await runtime.system_pool.fetchval(
        "SELECT properties FROM kg_nodes WHERE node_id = 'policy:old'"
    )
    (policy,) = (await project_policies(runtime)).values()

    # The projected row is the pre-v2 shape (a rebuild must match rows projected back then)...
    assert stored == {
        "rule": {
            "effect": "deny", "actions": [], "node_types": [], "labels": ["secret"],
            "scope": "selected",
        }
    }  # fmt: skip
    # ...and the decoded event is v2, its new selectors empty.
    assert (policy.rule.paths, policy.rule.node_ids, policy.rule.actors) == ((), (), ())
    assert policy.origin == "" and policy.rule.labels == ("secret",)


async def test_explain_reads_the_names_every_command_reads(runtime: Runtime) -> None:
    """Issue 30 item 7: `kg policy explain` takes a path, FR1 or a path not ingested yet, and
    explains the node it names (a path selector still says what would apply)."""
    from kg.events import EventMetadata, PolicyDefined
    from kg.ingest.service import ingest_paths
    from kg.policies.model import PolicyRule

    prd = runtime.settings.project_root / "docs" / "prd.md"
    prd.parent.mkdir(parents=True)
    prd.write_text("# PRD\n\n## Billing\n\nFR1 bills monthly.\n")
    await ingest_paths(runtime, None)
    rule = PolicyRule(effect="redact", paths=("docs/**",))
    await runtime.store.append(
        runtime.scope, "policies", [PolicyDefined(policy_id="policy:docs", name="d", rule=rule)],
        metadata=EventMetadata(actor="pytest"),
    )  # fmt: skip
    for name, node_id, exists in [
        ("docs/prd.md#billing", "section:docs/prd.md#billing", True),
        ("FR1", "requirement:FR-1", True),
        ("docs/later.md", "document:docs/later.md", False),
    ]:
        found = await explain_node(runtime, name)
        assert (found.node_id, found.exists) == (node_id, exists), name
    assert (await explain_node(runtime, "docs/later.md")).verdict == "redacted"
