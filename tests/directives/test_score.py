"""The ranking of :mod:`kg.directives.score` over a real catalogue: the array path that a
call takes (:meth:`Scorer.rank`) serves exactly what scoring each directive would."""

from __future__ import annotations

import numpy as np
import pytest

from kg.directives.model import when_words
from kg.directives.score import MIN_RELEVANCE, STRENGTH_MARGIN, Scorer, TaskContext
from kg.directives.words import words
from kg.embeddings.cache import query_vector
from kg.ingest.service import ingest_paths
from kg.read import directives as directive_rows
from kg.runtime import Runtime
from tests.rules.test_query_directives import copy_examples

TASKS = [
    ("add a column to the events table", "migrations/versions/0013_x.py", "4-Persistence"),
    ("add an MCP tool", "mcp_server/tools.py", None),
    ("fix a flaky test", "tests/test_x.py", "5-Tests"),
    ("hmm", "", None),
]


@pytest.mark.parametrize(("task", "path", "layer"), TASKS)
async def test_select_serves_what_scoring_each_directive_would(
    runtime: Runtime, task: str, path: str, layer: str | None
) -> None:
    copy_examples(runtime.settings.project_root)
    await ingest_paths(runtime, None)
    literal = await query_vector(runtime.embedder, task)
    vector = np.array(literal.strip("[]").split(","), dtype=np.float32)
    ctx = TaskContext(
        layer=layer, topics=frozenset({"testing", "database"}), words=words(task + " " + path),
        paths=(path,) if path else (), languages=frozenset(), frameworks=frozenset(),
    )  # fmt: skip
    bars = {k: MIN_RELEVANCE + m for k, m in STRENGTH_MARGIN.items()}
    async with runtime.reader().snapshot() as snap:
        cat = await directive_rows.load(snap, id(runtime.app_pool), when_words)

    scorer = Scorer(ctx)
    ranked = scorer.rank(cat, vector, bars, MIN_RELEVANCE)
    selected = {row.node_id: ranked.scored(i) for i, row in enumerate(ranked.rows)}

    norm = vector / np.linalg.norm(vector)
    assert cat.vectors is not None
    expected = {}
    for row, unit in zip(cat.rows, cat.vectors, strict=True):
        sim = float(unit @ norm)
        relevance = scorer.relevance(row, sim)
        if relevance is not None and (relevance >= bars[row.strength] or row.always_apply):
            expected[row.node_id] = scorer.score(row, sim)
    assert selected.keys() == expected.keys()
    for node_id, s in selected.items():
        assert s.score == pytest.approx(expected[node_id].score, abs=1e-3)
    if task != "hmm":
        assert selected, "the case serves something, so the comparison says something"
