"""The directive catalogue (:mod:`kg.read.directives`) is read once and kept while only other
calls' records follow it, and read again as soon as a rule changes."""

from __future__ import annotations

from kg.directives.model import when_words
from kg.erasure import Selection, erase
from kg.ingest.service import ingest_paths
from kg.read import directives as catalogue
from kg.rules.service import query_directives
from kg.runtime import Runtime


async def load(rt: Runtime) -> catalogue.Catalogue:
    async with rt.reader().snapshot() as snap:
        return await catalogue.load(snap, id(rt.app_pool), when_words)


async def test_calls_in_between_keep_the_rows_and_a_changed_rule_reads_them_again(
    runtime: Runtime,
) -> None:
    agents = runtime.settings.project_root / "AGENTS.md"
    agents.write_text("# Rules\n\n- Never commit secrets to git.\n- Always run ruff check.\n")
    await ingest_paths(runtime, None)
    first = await load(runtime)
    await query_directives(runtime, task="commit the change")  # appends DirectivesServed
    await query_directives(runtime, task="run the linter")
    kept = await load(runtime)
    assert kept.rows is first.rows, "records of served rules change no directive"
    assert kept.position > first.position, "the as-of position still follows the log"

    agents.write_text("# Rules\n\n- Never commit secrets or tokens to git.\n")
    await ingest_paths(runtime, None)
    changed = await load(runtime)
    assert [r.text for r in changed.rows] == ["Never commit secrets or tokens to git."]
    served = await query_directives(runtime, task="commit secrets to git")
    assert [d["text"] for d in served.directives] == ["Never commit secrets or tokens to git."]


async def test_a_node_of_another_type_reads_the_marker_and_keeps_the_rows(
    runtime: Runtime,
) -> None:
    root = runtime.settings.project_root
    (root / "AGENTS.md").write_text("# Rules\n\n- Never commit secrets to git.\n")
    await ingest_paths(runtime, None)
    first = await load(runtime)
    (root / "docs").mkdir()
    (root / "docs" / "guide.md").write_text("# Guide\n\nHow the parts fit together.\n")
    await ingest_paths(runtime, None)
    again = await load(runtime)
    assert again.rows is first.rows, "no directive changed: the marker says so"
    assert again.position > first.position


async def test_an_erased_rule_is_never_served_from_the_kept_rows(runtime: Runtime) -> None:
    secret = "zq7-deploy-passphrase-4f1c"
    agents = runtime.settings.project_root / "AGENTS.md"
    agents.write_text(f"# Rules\n\n- Never print the deploy passphrase {secret} in logs.\n")
    await ingest_paths(runtime, None)
    first = await query_directives(runtime, task="print the deploy passphrase in logs")
    assert secret in first.checklist, "positive control: the rule is served before the erasure"

    await erase(runtime, Selection("pattern", secret), reason="leaked", authority="SEC-1")

    after = await query_directives(runtime, task="print the deploy passphrase in logs")
    assert secret not in after.checklist
    assert all(secret not in d["text"] for d in after.directives)


async def test_rows_kept_for_another_database_are_not_served(runtime: Runtime) -> None:
    """A pool created later in the process can reuse an earlier pool's id: the kept rows say
    which database they came from."""
    (runtime.settings.project_root / "AGENTS.md").write_text("# Rules\n\n- Always run ruff.\n")
    await ingest_paths(runtime, None)
    real = await load(runtime)
    scope = runtime.scope
    key = (id(runtime.app_pool), scope.tenant_id, scope.project_id)
    foreign = catalogue.Catalogue(real.position, (), None)
    catalogue._cache[key] = catalogue._Cached((0, 0), foreign, real.position, 0, "elsewhere")
    again = await load(runtime)
    assert [r.text for r in again.rows] == ["Always run ruff."]


def test_the_catalogue_reads_the_directives_node_type() -> None:
    """The read side names the directives' node type itself (it does not import kg.directives):
    the two must agree, or the catalogue would read no rows."""
    from kg.directives.model import DIRECTIVE

    assert catalogue.DIRECTIVE == DIRECTIVE
