"""The MUST directives that apply to a context graph's files, for ``build_context_graph``.

A context graph shows documents, sections, code: when project rules govern the files those
nodes come from (a Cursor rule's globs match them, or a rule's layer is the one their paths
name), its MUST directives belong in front of the agent too. They are chosen from the same
snapshot as the graph and from nothing outside the log (no manifests are read), so a
reproduced graph (``kg audit context``) chooses the same ones; they are policy-checked like
any node, take at most :data:`SHARE` of the token budget (the graph is built within the
rest) and at most :data:`MAX_MUSTS` lines.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg.directives.detect import detect_context
from kg.directives.globs import glob_matches
from kg.directives.model import when_words
from kg.directives.score import Scorer, TaskContext, applicable
from kg.directives.words import words
from kg.policies.evaluate import Governance
from kg.read import directives as directive_rows
from kg.read.reader import Snapshot

MAX_MUSTS = 5
SHARE = 0.25
_PATH_KEYS = ("path", "file_path", "file")
#: id kinds whose id is ``kind:<file path>[#...]`` (kg.ingest: documents, sections, code symbols)
_FILE_ID_KINDS = frozenset({"document", "section", "function", "class"})


@dataclass(frozen=True)
class GraphDirective:
    node_id: str
    text: str
    source: str

    def line(self) -> str:
        return f"- [ ] MUST: {self.text} ({self.source})"


def node_files(nodes: Any) -> list[str]:
    """The project files a graph's nodes come from (documents, sections, code)."""
    files: dict[str, None] = {}
    for n in nodes:
        if n.redacted:
            continue
        kind, _, rest = n.node_id.partition(":")
        if kind in _FILE_ID_KINDS:  # the shown node leaves out a path its id says
            files[rest.partition("#")[0]] = None
        for key in _PATH_KEYS:
            value = n.properties.get(key) if isinstance(n.properties, dict) else None
            if isinstance(value, str) and value and not value.startswith("/"):
                files[value] = None
    return list(files)


async def musts_for(
    snap: Snapshot,
    pool_key: int,
    files: list[str],
    task: str,
    token_budget: int | None,
    gov: Governance,
) -> list[GraphDirective]:
    if not files:
        return []
    cat = await directive_rows.load(snap, pool_key, when_words)
    if not cat.rows:
        return []
    detected = detect_context(Path("."), task=task, paths=files, manifests=False)
    ctx = TaskContext(
        layer=detected.layer if detected.layer_confidence >= 0.6 else None,
        topics=frozenset(detected.topic_names),
        words=words(task),
        paths=tuple(files),
        languages=frozenset(),
        frameworks=frozenset(),
        topic_confidence={f.value: f.confidence for f in detected.topics},
    )
    candidates = []
    scorer = Scorer(ctx)
    for row in cat.rows:
        if row.strength != "MUST" or not applicable(row, ctx):
            continue
        by_glob = bool(row.globs) and any(glob_matches(g, f) for g in row.globs for f in files)
        by_layer = ctx.layer is not None and ctx.layer in row.layers
        if by_glob or by_layer:
            candidates.append(scorer.score(row, 0.0))
    candidates.sort(key=lambda s: (-s.score, s.row.node_id))
    governing = await directive_rows.governed_by(snap, [s.row.node_id for s in candidates])
    allowance = int(token_budget * SHARE) if token_budget else None
    chosen: list[GraphDirective] = []
    used = 0
    for s in candidates:
        if len(chosen) == MAX_MUSTS:
            break
        verdict = gov.verdict(
            "Directive", s.row.labels, governing.get(s.row.node_id, ()), s.row.node_id
        )
        if verdict.denied_by or verdict.redacted_by:
            continue  # a rule a policy withholds is left out, like a denied node
        d = GraphDirective(s.row.node_id, s.row.text, s.row.source)
        cost = (len(d.line()) + 4) // 4
        if allowance is not None and used + cost > allowance:
            break
        chosen.append(d)
        used += cost
    return chosen


def block(directives: list[GraphDirective]) -> str:
    """The rendering's section for them."""
    lines = ["", "## Project rules (MUST) for these files"] + [d.line() for d in directives]
    return "\n".join(lines) + "\n"


def tokens(directives: list[GraphDirective]) -> int:
    return (len(block(directives)) + 3) // 4


def combined_hash(graph_hash: str, directives: list[GraphDirective]) -> str:
    """The graph's hash when directives were added: they are part of what the agent saw."""
    data = [graph_hash, [[d.node_id, d.text, d.source] for d in directives]]
    return hashlib.sha256(json.dumps(data, separators=(",", ":")).encode()).hexdigest()
