"""Application functions for directives, shared by the CLI (``kg rules``) and the MCP tools.

``query_directives`` detects the task's context (or takes it as given), ranks the project's
directives (:mod:`kg.directives.score`), lets :mod:`kg.policies` decide each one like any node,
fits them into the token budget with the three most relevant MUSTs first and never cut,
renders a checklist, and logs what it served as ``DirectivesServed``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kg.directives.detect import DetectedContext, detect_context
from kg.directives.model import DIRECTIVE, STRENGTHS, layer_name, when_words
from kg.directives.score import (
    MIN_RELEVANCE,
    STRENGTH_MARGIN,
    Ranked,
    Scored,
    Scorer,
    TaskContext,
)
from kg.directives.words import words
from kg.embeddings.cache import query_vector
from kg.errors import EmbeddingError, NotFoundError, ValidationError
from kg.events import EventMetadata
from kg.events.directives import DirectivesServed
from kg.ingest.files import project_relpath
from kg.ingest.schema_map import load_schema_map
from kg.policies.evaluate import Governance
from kg.policies.model import REDACTED_NAME
from kg.read import directives as directive_rows
from kg.read.directives import DirectiveRow
from kg.read.task_vector import fallback_warning
from kg.runtime import Runtime
from kg.validation import check_text, check_texts, clip

DEFAULT_BUDGET = 900
MIN_BUDGET, MAX_BUDGET = 100, 20_000
PROTECTED_MUSTS = 3
MAX_PATHS = 1000
MAX_DIFF_CHARS = 1_000_000
NO_DIRECTIVES = (
    "no directives in this project yet: put rules in AGENTS.md, CLAUDE.md, "
    ".cursor/rules/*.mdc, .github/copilot-instructions.md or docs/rules/*.md and run "
    "`kg ingest` (or `kg sync`); see `kg rules --help`"
)


@dataclass
class ServedDirectives:
    served_id: str
    directives: list[dict[str, Any]]
    detected: DetectedContext
    checklist: str
    token_estimate: int
    token_budget: int
    considered: int
    applicable: int
    cut_by_budget: int
    excluded_by_policy: int
    redacted_by_policy: int
    as_of_position: int
    warnings: list[str] = field(default_factory=list)

    def diagnostics(self) -> dict[str, Any]:
        return {
            "layer": self.detected.layer,
            "layer_confidence": round(self.detected.layer_confidence, 3),
            "topics": list(self.detected.topic_names),
            "confidence": self.detected.confidence,
            "considered": self.considered,
            "applicable": self.applicable,
            "served": len(self.directives),
            "cut_by_budget": self.cut_by_budget,
            "excluded_by_policy": self.excluded_by_policy,
            "redacted_by_policy": self.redacted_by_policy,
            "token_estimate": self.token_estimate,
            "token_budget": self.token_budget,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "served_id": self.served_id,
            "directives": self.directives,
            "checklist": self.checklist,
            "diagnostics": self.diagnostics(),
            "detected": self.detected.to_dict(),
            "as_of_position": self.as_of_position,
            "warnings": self.warnings,
        }


def _relative(rt: Runtime, paths: tuple[str, ...] | list[str]) -> list[str]:
    if len(paths) > MAX_PATHS:
        raise ValidationError(f"{len(paths)} paths given; the limit is {MAX_PATHS}")
    check_texts("paths", paths, 4096)
    root = rt.settings.project_root
    out = []
    for path in paths:
        rel = project_relpath(root, root / path) if path.strip() else None
        if rel is None:
            raise ValidationError(
                f"path {clip(path)} is outside the project root {root}: give paths relative "
                "to the project root"
            )
        out.append(rel)
    return out


def _check(task: str, diff: str, layer: str | None, topics: tuple[str, ...] | list[str]) -> None:
    check_text("task", task, 4000)
    check_text("diff", diff, MAX_DIFF_CHARS)
    check_texts("topics", topics, 64)
    if layer is not None and layer_name(layer) is None:
        raise ValidationError(
            f"layer {clip(layer)} is unknown: use one of 1-Presentation, 2-Application, "
            "3-Domain, 4-Persistence, 5-Tests, 6-Docs, 7-Deployment (or the number)"
        )


async def detect(
    rt: Runtime,
    *,
    task: str = "",
    paths: tuple[str, ...] | list[str] = (),
    diff: str = "",
    layer: str | None = None,
    topics: tuple[str, ...] | list[str] = (),
) -> DetectedContext:
    """``detect_context``: reads files (manifests) only; writes nothing.

    Raises:
        ValidationError: nothing to detect from (an empty task and no paths, diff, layer or
            topics): the answer would be a guess about nothing.
    """
    if not (task.strip() or paths or diff.strip() or layer or topics):
        raise ValidationError(
            "detect_context needs something to detect from: a task text (what you are about "
            "to do), the file paths involved, or a diff (a layer or topics may be given too)"
        )
    return await _detected(rt, task=task, paths=paths, diff=diff, layer=layer, topics=topics)


async def _detected(
    rt: Runtime,
    *,
    task: str,
    paths: tuple[str, ...] | list[str],
    diff: str,
    layer: str | None,
    topics: tuple[str, ...] | list[str],
) -> DetectedContext:
    _check(task, diff, layer, topics)
    relpaths = _relative(rt, paths)
    root = rt.settings.project_root
    config = load_schema_map(root).directives
    return detect_context(
        root, task=task, paths=relpaths, diff=diff, config=config,
        layer=layer_name(layer) if layer else None, topics=[t.casefold() for t in topics],
    )  # fmt: skip


async def query_directives(
    rt: Runtime,
    *,
    task: str = "",
    paths: tuple[str, ...] | list[str] = (),
    diff: str = "",
    layer: str | None = None,
    topics: tuple[str, ...] | list[str] = (),
    strict_layer: bool = False,
    token_budget: int = DEFAULT_BUDGET,
    metadata: EventMetadata | None = None,
) -> ServedDirectives:
    """The directives that apply to a task, ranked, within ``token_budget``; logged."""
    if not MIN_BUDGET <= token_budget <= MAX_BUDGET:
        raise ValidationError(
            f"token_budget {token_budget} is out of range: use {MIN_BUDGET} to {MAX_BUDGET}"
        )
    detected = await _detected(rt, task=task, paths=paths, diff=diff, layer=layer, topics=topics)
    query_text = task.strip() or " ".join(detected.topic_names)
    vector = None
    unembedded: list[str] = []  # why the task was not embedded (the embedder failed)
    if query_text:
        try:
            literal = await query_vector(rt.embedder, query_text)
        except EmbeddingError as error:  # ranked without similarity: degraded, not refused
            unembedded.append(fallback_warning(str(error)))
        else:
            vector = np.array(literal.strip("[]").split(","), dtype=np.float32)
    ctx = TaskContext(
        layer=detected.layer,
        topics=frozenset(detected.topic_names),
        words=words(task + " " + " ".join(detected.paths)),
        paths=tuple(detected.paths),
        languages=frozenset(f.value for f in detected.languages),
        frameworks=frozenset(f.value for f in detected.frameworks),
        strict_layer=strict_layer,
        topic_confidence={f.value: f.confidence for f in detected.topics},
    )
    async with rt.reader().snapshot() as snap:
        cat = await directive_rows.load(snap, id(rt.app_pool), when_words)
        if not cat.rows:
            raise NotFoundError(NO_DIRECTIVES)
        bars = {k: MIN_RELEVANCE + margin for k, margin in STRENGTH_MARGIN.items()}
        eligible = Scorer(ctx).rank(cat, vector, bars, MIN_RELEVANCE)
        gov = (await snap.governed()).governance
        governing = (
            {}  # no policy to decide by them
            if gov.admits_everything
            else await directive_rows.governed_by(snap, [r.node_id for r in eligible.rows])
        )
    served, cut, _ = _fit(eligible, gov, governing, token_budget, _prefix(detected))
    redacted = sum(1 for s, shown in served if not shown)
    entries = [_entry(s, shown) for s, shown in served]
    checklist = render_checklist(detected, entries)
    tokens = _tokens(checklist)
    served_id = f"ds_{uuid.uuid4().hex}"
    result = ServedDirectives(
        served_id=served_id, directives=entries, detected=detected, checklist=checklist,
        token_estimate=tokens, token_budget=token_budget, considered=len(cat.rows),
        applicable=len(eligible), cut_by_budget=cut, excluded_by_policy=gov.excluded_nodes,
        redacted_by_policy=redacted, as_of_position=cat.position,
        warnings=[*detected.warnings, *unembedded],
    )  # fmt: skip
    request = {
        "task": task, "paths": list(paths), "diff_chars": len(diff), "layer": layer,
        "topics": list(topics), "strict_layer": strict_layer, "token_budget": token_budget,
    }  # fmt: skip
    event = DirectivesServed(
        served_id=served_id, request=request, detected=detected.summary(),
        as_of_position=cat.position, directive_ids=tuple(e["node_id"] for e in entries),
        content_hash=_content_hash(entries), considered=len(cat.rows), cut_by_budget=cut,
        excluded_count=gov.excluded_nodes, redacted_count=redacted,
        policies_applied=tuple(sorted(gov.applied)), token_estimate=tokens,
    )  # fmt: skip
    await rt.store.append(
        rt.scope, f"directives:{served_id}", [event], expected_version=0,
        metadata=metadata or EventMetadata(actor="query_directives"),
    )  # fmt: skip
    return result


def _line_chars(row: DirectiveRow, shown: bool) -> int:
    """The length of a directive's checklist line as :func:`render_checklist` writes it
    (``- L18 text`` under its file's heading; ``- text (source)`` without a file)."""
    if not shown:
        return len(f"- {REDACTED_NAME} ({row.node_id}, redacted by policy)")
    if not row.file:
        return len(row.text) + len(row.source) + 5
    return len(row.text) + len(str(row.line)) + 4


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


class _Cost:
    """The characters the checklist takes as lines are added: a line, plus its group's
    heading (its strength, its file) the first time that group is used."""

    def __init__(self, head: str) -> None:
        self.chars = len(head) + 1
        self.groups: set[tuple[str, str]] = set()
        self.strengths: set[str] = set()

    def of(self, row: DirectiveRow, shown: bool) -> int:
        cost = _line_chars(row, shown) + 1
        if row.strength not in self.strengths:
            cost += len(f"### {row.strength}") + 1
        if shown and row.file and (row.strength, row.file) not in self.groups:
            cost += len(row.file) + 2
        return cost

    def add(self, row: DirectiveRow, shown: bool) -> None:
        self.chars += self.of(row, shown)
        self.strengths.add(row.strength)
        if shown and row.file:
            self.groups.add((row.strength, row.file))

    def tokens(self, extra: int = 0) -> int:
        return (self.chars + extra + 3) // 4


def _fit(
    eligible: Ranked,
    gov: Governance,
    governing: dict[str, tuple[str, ...]],
    budget: int,
    head: str,
) -> tuple[list[tuple[Scored, bool]], int, int]:
    """The three most relevant MUSTs first (never cut), then the rest by score while they fit
    (the budget counts the checklist as rendered: lines, and the headings they bring).

    Each candidate is decided by the policies once; a denied one is only counted. Only the
    served ones are scored in full."""
    rows = eligible.rows
    admitted: list[tuple[int, bool]] = []
    if gov.admits_everything:
        admitted = [(i, True) for i in range(len(rows))]
    else:
        for i, row in enumerate(rows):
            verdict = gov.admit(DIRECTIVE, row.labels, governing.get(row.node_id, ()), row.node_id)
            if not verdict.denied:
                admitted.append((i, not verdict.redacted))
    musts = [a for a in admitted if rows[a[0]].strength == "MUST"][:PROTECTED_MUSTS]
    chosen = {i for i, _ in musts}
    cost = _Cost(head)
    for i, shown in musts:
        cost.add(rows[i], shown)
    served = list(musts)
    cut = 0
    # No line is shorter than this: once it no longer fits, the rest is cut without a look.
    floor = min(eligible.shortest, len(REDACTED_NAME)) + 5
    for k, (i, shown) in enumerate(admitted):
        if i in chosen:
            continue
        if cost.tokens(floor) > budget:
            cut += sum(1 for j, _ in admitted[k:] if j not in chosen)
            break
        if cost.tokens(cost.of(rows[i], shown)) > budget:
            cut += 1
            continue
        served.append((i, shown))
        cost.add(rows[i], shown)
    order: dict[str, int] = {strength: i for i, strength in enumerate(STRENGTHS)}
    served.sort(key=lambda a: (order.get(rows[a[0]].strength, 3), a[0]))
    return [(eligible.scored(i), shown) for i, shown in served], cut, cost.tokens()


def _entry(s: Scored, shown: bool) -> dict[str, Any]:
    if not shown:
        return {"node_id": s.row.node_id, "strength": s.row.strength, "text": REDACTED_NAME,
                "source": "", "file": "", "line": 0, "score": s.score, "redacted": True,
                "parts": {}}  # fmt: skip
    return {
        "node_id": s.row.node_id,
        "strength": s.row.strength,
        "text": s.row.text,
        "source": s.row.source,
        "file": s.row.file,
        "line": s.row.line,
        "score": s.score,
        "redacted": False,
        "parts": s.parts,
    }


def heading(detected: DetectedContext) -> str:
    """The checklist's first line: the detected layer and topics (the rest of the diagnostics
    are in the result, not in the prompt; a low confidence is a warning above it)."""
    said = [detected.layer] if detected.layer else []
    if detected.topic_names:
        said.append(", ".join(detected.topic_names))
    return "## Project rules" + (f" ({'; '.join(said)})" if said else "")


def _prefix(detected: DetectedContext) -> str:
    return "\n".join([f"**WARNING: {w}**" for w in detected.warnings] + [heading(detected)])


def render_checklist(detected: DetectedContext, entries: list[dict[str, Any]]) -> str:
    """The prompt-ready checklist: warnings first, then MUST, SHOULD, MAY; within each, the
    statements grouped under their file (files in the order of their most relevant
    statement), each with its line: ``- L18 ...`` under ``docs/rules/persistence.md:`` is
    ``docs/rules/persistence.md:18``. A file name is written once per group, not per line."""
    lines = [_prefix(detected)]
    for strength in STRENGTHS:
        group = [e for e in entries if e["strength"] == strength]
        if not group:
            continue
        lines.append(f"### {strength}")
        by_file: dict[str, list[dict[str, Any]]] = {}
        for e in group:
            by_file.setdefault(e.get("file") or "", []).append(e)
        for file, items in by_file.items():
            if file:
                lines.append(f"{file}:")
            for e in items:
                if e["redacted"]:
                    lines.append(f"- {REDACTED_NAME} ({e['node_id']}, redacted by policy)")
                elif file:
                    lines.append(f"- L{e['line']} {e['text']}")
                else:
                    lines.append(f"- {e['text']} ({e['source']})")
    if not entries:
        lines.append("No directive applies to this task.")
    return "\n".join(lines) + "\n"


def _content_hash(entries: list[dict[str, Any]]) -> str:
    data = [[e["node_id"], e["strength"], e["text"]] for e in entries]
    return hashlib.sha256(json.dumps(data, separators=(",", ":")).encode()).hexdigest()
