"""The hostile file corpus through ingest and lint: one bad file never costs the batch.

For every entry of :data:`tests.hostile.corpus.CORPUS`, in a project with good files beside
it: ``ingest`` appends every good file and names the bad one with ``file:line``; ``lint``
names it the same way (and does not crash); no message carries a traceback; the tenant's hash
chain still verifies afterwards.
"""

from __future__ import annotations

import pytest

from kg.audit.verify import verify_tenant
from kg.ingest.service import ingest_paths, lint_project
from kg.runtime import Runtime
from tests.hostile.corpus import CORPUS, GOOD_FILES, Hostile, write_project

GOOD = {f"docs/good-{i}.md" for i in range(GOOD_FILES)}


def _named(messages: list[str], hostile: Hostile) -> None:
    path = f"docs/{hostile.name}"
    assert hostile.problem is not None
    mine = [m for m in messages if m.startswith(f"{path}:") and hostile.problem in m]
    assert mine, f"{path} not named with {hostile.problem!r}: {messages}"
    if hostile.line is not None:
        assert any(m.startswith(f"{path}:{hostile.line}: ") for m in mine), mine


@pytest.mark.parametrize("hostile", CORPUS, ids=lambda h: h.name)
async def test_a_hostile_file_is_named_and_the_batch_goes_on(
    hostile: Hostile, runtime: Runtime
) -> None:
    root = runtime.settings.project_root
    write_project(root, hostile)

    report = await ingest_paths(runtime, None)

    assert set(report.changed) >= GOOD, report.to_dict()
    messages = [str(p) for p in report.problems]
    assert not any("Traceback" in m or len(m) > 2000 for m in messages)
    if hostile.problem is None:
        assert f"docs/{hostile.name}" in report.changed, messages
        assert not [m for m in messages if m.startswith(f"docs/{hostile.name}:")], messages
    else:
        _named(messages, hostile)
        linted = [str(p) for p in await lint_project(root)]
        _named(linted, hostile)
    assert not [m for m in messages if m.startswith("docs/good-")]
    verified = await verify_tenant(runtime.app_pool, runtime.scope.tenant_id)
    assert verified.ok, str(verified)
    assert verified.events >= 3 * GOOD_FILES


async def test_the_whole_corpus_in_one_batch(runtime: Runtime) -> None:
    """All of it at once, as ``kg ingest docs`` on a project that collected every mistake."""
    root = runtime.settings.project_root
    for hostile in CORPUS:
        write_project(root, hostile)

    report = await ingest_paths(runtime, None)

    assert set(report.changed) >= GOOD
    messages = [str(p) for p in report.problems]
    for hostile in CORPUS:
        if hostile.problem is not None:
            _named(messages, hostile)
    assert (await verify_tenant(runtime.app_pool, runtime.scope.tenant_id)).ok
