"""Which directives apply to a task, and how relevant each one is: the documented score.

``score = 10 * authority + 8 * condition + 7 * layer + 5 * topics + 4 * severity + 3 * semantic``

* authority: when the directive's file is authoritative for a detected topic, that topic's
  detection confidence (0.4..1), else 0;
* condition: how much of its best When-to-Apply condition the task's words cover (0..1), at
  least 0.5 when the task is about all the condition's topics; a rule file without conditions
  has its section heading as one ("## Testing", :func:`kg.directives.model.when_texts`);
* layer: 1 when a file in play matches its globs, or its layer is the detected one or ``*``,
  or it names no layer (the root ``AGENTS.md``, the Copilot instructions: rules for the
  whole repository, which is what ``*`` says); 0 for another layer;
* topics: Jaccard overlap of its topics with the detected ones;
* severity: the template's Severity (critical 1 ... low 0.3), else its strength (MUST 1,
  SHOULD 0.6, MAY 0.3);
* semantic: cosine similarity of the task and the directive (embeddings, clipped at 0).

A directive is **applicable** unless its scope rules it out: globs that no file in play
matches (when files are given), languages or frameworks the project does not use (when known),
or, with ``strict_layer``, a layer other than the detected one. It is **served** when it is
applicable and its relevance (the score without the severity term, which says how much it
matters, not whether it applies) reaches :data:`MIN_RELEVANCE` (a SHOULD or a MAY: that plus
its :data:`STRENGTH_MARGIN`), or when its rule file says ``alwaysApply``, or when it is a MUST
whose own When-to-Apply condition the task's words cover (:data:`CONDITION_MATCH`): the rule
said when it applies, and that outweighs a guess of the task's layer. The weights are the
design's; the threshold was tuned on the labelled cases of ``bench/bench_directives.py`` (see
``bench/RESULTS.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from kg.directives.globs import glob_matches
from kg.directives.model import SEVERITIES, STRENGTH_WEIGHT, STRENGTHS, WILDCARD
from kg.read.directives import Catalogue, DirectiveRow

WEIGHTS = {"authority": 10.0, "condition": 8.0, "layer": 7.0, "topics": 5.0, "severity": 4.0,
           "semantic": 3.0}  # fmt: skip
MIN_RELEVANCE = 12.0
#: How much more than :data:`MIN_RELEVANCE` a directive of each strength needs to be served:
#: the weaker the rule, the surer its relevance must be. A MUST is served as soon as it
#: applies (missing an obligation costs the most). A SHOULD needs one point more: on the
#: labelled cases that cut 20 served SHOULDs of which 6 applicable (120 of 127 still served)
#: and 5% of the tokens, precision 0.875 -> 0.889. A MAY is a permission: it is served when it
#: clearly applies (+6 served 23 of 43 applicable MAYs and 7% fewer tokens than +0). No MUST
#: is lost by either (bench/RESULTS.md, issue 20).
STRENGTH_MARGIN: dict[str, float] = {"MUST": 0.0, "SHOULD": 1.0, "MAY": 6.0}
#: A condition all of whose topics the task is about ("## HTTP handlers" for a task about
#: an endpoint and its route) counts as half covered even when it shares no word with it.
TOPIC_CONDITION = 0.5
STRONG_TOPIC = 0.75
#: A MUST is served, whatever the layer detected, when the task's words cover this much of
#: one of its conditions of at least :data:`CONDITION_MIN_WORDS` words ("handling user input
#: in an API endpoint or validating a request body" for "handle user input in an API endpoint
#: and validate the request body", issue 30): with the layer guessed wrong (1-Presentation
#: for "endpoint") its relevance was 11.2 of the 12 it needed. A strict layer still rules it
#: out. Chosen on the labelled cases (bench/RESULTS.md, issue 30 item 4).
CONDITION_MATCH = 0.75
CONDITION_MIN_WORDS = 3


@dataclass(frozen=True, slots=True)
class TaskContext:
    layer: str | None
    topics: frozenset[str]
    words: frozenset[str]
    paths: tuple[str, ...]
    languages: frozenset[str]
    frameworks: frozenset[str]
    strict_layer: bool = False
    #: topic -> detection confidence (topics not here count 1.0)
    topic_confidence: dict[str, float] = field(default_factory=dict)

    @property
    def strong_topics(self) -> frozenset[str]:
        """Topics the task is about, not only mentions (two words or more, or given)."""
        return frozenset(
            t for t in self.topics if self.topic_confidence.get(t, 1.0) >= STRONG_TOPIC
        )


@dataclass(frozen=True, slots=True)
class Scored:
    row: DirectiveRow
    score: float
    relevance: float
    parts: dict[str, float]


def applicable(row: DirectiveRow, ctx: TaskContext) -> bool:
    if row.globs and ctx.paths and not _glob_hit(row, ctx):
        return False
    return _fits(row, ctx)


def _fits(row: DirectiveRow, ctx: TaskContext) -> bool:
    """The rest of :func:`applicable`: languages, frameworks and a strict layer."""
    if row.languages and ctx.languages and not row.languages & ctx.languages:
        return False
    if row.frameworks and ctx.frameworks and not row.frameworks & ctx.frameworks:
        return False
    if ctx.strict_layer and ctx.layer and row.layers and WILDCARD not in row.layers:
        return ctx.layer in row.layers
    return True


def _glob_hit(row: DirectiveRow, ctx: TaskContext) -> bool:
    return any(glob_matches(g, p) for g in row.globs for p in ctx.paths)


_Group = tuple[bool, float, float, float]  # applicable, authority, condition, layer


def condition_matched(row: DirectiveRow, task_words: frozenset[str]) -> bool:
    """Whether the task's words cover :data:`CONDITION_MATCH` of one of the row's conditions
    (of :data:`CONDITION_MIN_WORDS` words or more: a one-word section heading says too little)."""
    return any(
        len(wanted) >= CONDITION_MIN_WORDS
        and len(wanted & task_words) >= CONDITION_MATCH * len(wanted)
        for wanted in row.when_words
    )


@dataclass(frozen=True)
class RowIndex:
    """What a call needs to score every directive at once, worked out once per catalogue:
    the statements of one rule-file section share their scope, conditions and authority (a
    *group*), and many share their topic set, so a call works those out once each and the
    rest is array arithmetic."""

    groups: tuple[DirectiveRow, ...]  # one row standing for each group
    group_of: npt.NDArray[np.intp]  # row -> its group
    topic_vocab: dict[str, int]  # every topic a directive has -> its column
    topic_members: npt.NDArray[np.float64]  # topic set x topic: 1 when the set holds it
    topic_sizes: npt.NDArray[np.float64]  # topic set -> its size
    topics_of: npt.NDArray[np.intp]  # row -> its topic set
    strength_of: npt.NDArray[np.intp]  # row -> index in STRENGTHS (len(STRENGTHS): other)
    always: npt.NDArray[np.bool_]  # row -> its rule file says alwaysApply
    severity: npt.NDArray[np.float64]  # row -> its severity term (see Scorer._scored)
    text_chars: npt.NDArray[np.intp]  # row -> the length of its statement


def _group_key(row: DirectiveRow) -> tuple[object, ...]:
    return (row.file, row.section, row.globs, row.layers, row.languages, row.frameworks)


def row_index(cat: Catalogue) -> RowIndex:
    """The catalogue's :class:`RowIndex` (built on first use, kept with its rows)."""
    found = cat.memo.get("score.RowIndex")
    if isinstance(found, RowIndex):
        return found
    groups: dict[tuple[object, ...], DirectiveRow] = {}
    group_ids: dict[tuple[object, ...], int] = {}
    topic_sets: dict[frozenset[str], int] = {}
    strengths: dict[str, int] = {s: i for i, s in enumerate(STRENGTHS)}
    group_of, topics_of, strength_of = [], [], []
    for row in cat.rows:
        key = _group_key(row)
        groups.setdefault(key, row)
        group_of.append(group_ids.setdefault(key, len(group_ids)))
        topics_of.append(topic_sets.setdefault(row.topics, len(topic_sets)))
        strength_of.append(strengths.get(row.strength, len(STRENGTHS)))
    vocab = {t: i for i, t in enumerate(sorted({t for ts in topic_sets for t in ts}))}
    members = np.zeros((len(topic_sets), len(vocab)), dtype=np.float64)
    for ts, i in topic_sets.items():
        members[i, [vocab[t] for t in ts]] = 1.0
    index = RowIndex(
        groups=tuple(groups.values()),
        group_of=np.array(group_of, dtype=np.intp),
        topic_vocab=vocab,
        topic_members=members,
        topic_sizes=np.array([len(ts) for ts in topic_sets], dtype=np.float64),
        topics_of=np.array(topics_of, dtype=np.intp),
        strength_of=np.array(strength_of, dtype=np.intp),
        always=np.array([r.always_apply for r in cat.rows], dtype=np.bool_),
        severity=np.array([_severity(r) for r in cat.rows], dtype=np.float64),
        text_chars=np.array([len(r.text) for r in cat.rows], dtype=np.intp),
    )
    cat.memo["score.RowIndex"] = index
    return index


def _severity(row: DirectiveRow) -> float:
    return SEVERITIES.get(row.severity or "", STRENGTH_WEIGHT.get(row.strength, 0.6))


@dataclass(frozen=True)
class Ranked:
    """The directives one call serves, best first (score, then id). Each is scored in full
    (:class:`Scored`, with its terms) only when asked: a call serves about 15 of the 160 or
    so that clear their bar at 5,000 directives."""

    rows: list[DirectiveRow]
    _terms: list[tuple[_Group, float, float]]  # its group's terms, topic overlap, similarity
    shortest: int = 0  # the characters of the shortest statement among them

    def __len__(self) -> int:
        return len(self.rows)

    def scored(self, i: int) -> Scored:
        group, topics, similarity = self._terms[i]
        return Scorer._scored(self.rows[i], group, topics, similarity)


class Scorer:
    """Scores many directives for one task. What the statements of one rule file section
    share (scope, conditions, the file's authority) is worked out once per section, so a
    call over thousands of directives costs a few set operations per directive."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx
        self.strong = ctx.strong_topics
        self._groups: dict[tuple[object, ...], _Group] = {}
        self._globs: dict[tuple[str, ...], bool] = {}

    def _group(self, row: DirectiveRow) -> _Group:
        key = _group_key(row)
        found = self._groups.get(key)
        if found is None:
            found = self._groups[key] = self._work_out(row)
        return found

    def _glob_hit(self, row: DirectiveRow) -> bool:
        """Whether a file in play matches the row's globs (the sections of one rule file, and
        often many files, share their globs: each set is matched once per call)."""
        hit = self._globs.get(row.globs)
        if hit is None:
            hit = self._globs[row.globs] = _glob_hit(row, self.ctx)
        return hit

    def _work_out(self, row: DirectiveRow) -> _Group:
        ctx = self.ctx
        if row.globs and ctx.paths and not self._glob_hit(row):
            return (False, 0.0, 0.0, 0.0)
        if not _fits(row, ctx):
            return (False, 0.0, 0.0, 0.0)
        authority = max(
            (ctx.topic_confidence.get(t, 1.0) for t in row.authoritative_for & ctx.topics),
            default=0.0,
        )
        condition = 0.0
        for wanted in row.when_words:
            if wanted:
                condition = max(condition, len(wanted & ctx.words) / len(wanted))
        if any(topics <= self.strong for topics in row.condition_topics):
            condition = max(condition, TOPIC_CONDITION)
        if row.globs and ctx.paths and self._glob_hit(row):
            layer = 1.0
        elif not row.layers or WILDCARD in row.layers:
            # An unscoped rule covers every layer like ``*``. It counted 0.5 until session 7,
            # which ranked a root AGENTS.md section below an equally relevant ``*`` file
            # and left three applicable MUSTs unserved (bench/RESULTS.md, issue 20).
            layer = 1.0
        elif ctx.layer is not None and ctx.layer in row.layers:
            layer = 1.0
        else:
            layer = 0.0
        return (True, authority, condition, layer)

    def relevance(self, row: DirectiveRow, similarity: float) -> float | None:
        """The score without its severity term, or None when the directive does not apply."""
        ok, authority, condition, layer = self._group(row)
        if not ok:
            return None
        union = row.topics | self.ctx.topics
        topics = len(row.topics & self.ctx.topics) / len(union) if union else 0.0
        return (
            WEIGHTS["authority"] * authority
            + WEIGHTS["condition"] * condition
            + WEIGHTS["layer"] * layer
            + WEIGHTS["topics"] * topics
            + WEIGHTS["semantic"] * max(0.0, similarity)
        )

    def rank(
        self,
        cat: Catalogue,
        query: npt.NDArray[np.float32] | None,
        bars: dict[str, float],
        default_bar: float,
    ) -> Ranked:
        """The directives of ``cat`` that are served, best first: applicable, and with a
        relevance that reaches their strength's bar (``bars``, else ``default_bar``), or
        ``alwaysApply``.

        The same numbers as :meth:`relevance` and :meth:`score` row by row, in arrays: a
        group's and a topic set's terms once each, and the (embedding) similarity only for
        the rows it could lift over their bar."""
        if not cat.rows:
            return Ranked([], [], 0)
        index = row_index(cat)
        w = WEIGHTS
        group_terms = [self._work_out(row) for row in index.groups]  # each group once
        terms = np.array([g[1:] for g in group_terms], dtype=np.float64)  # a, c, layer
        authority, condition, layer = terms[:, 0], terms[:, 1], terms[:, 2]
        ok = np.array([g[0] for g in group_terms], dtype=np.bool_)
        matched = np.array(
            [g[0] and condition_matched(row, self.ctx.words)
             for g, row in zip(group_terms, index.groups, strict=True)],
            dtype=np.bool_,
        )  # fmt: skip
        group_part = np.where(
            ok, w["authority"] * authority + w["condition"] * condition + w["layer"] * layer,
            -np.inf,
        )  # fmt: skip
        wanted = np.zeros(len(index.topic_vocab), dtype=np.float64)
        for topic in self.ctx.topics:
            if topic in index.topic_vocab:
                wanted[index.topic_vocab[topic]] = 1.0
        shared = index.topic_members @ wanted  # Jaccard: shared / (both sizes - shared)
        union = index.topic_sizes + len(self.ctx.topics) - shared
        topic_part = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
        base = group_part[index.group_of] + w["topics"] * topic_part[index.topics_of]
        bar_of = np.array([bars.get(s, default_bar) for s in STRENGTHS] + [default_bar])
        bar = bar_of[index.strength_of]
        # A MUST (strength index 0) whose condition the task states is served (see above).
        forced = index.always | (matched[index.group_of] & (index.strength_of == 0))
        candidates = np.flatnonzero(np.isfinite(base) & ((base + w["semantic"] >= bar) | forced))
        sims = similarities(
            None if cat.vectors is None else cat.vectors[candidates], query, len(candidates)
        ).astype(np.float64)
        relevance = base[candidates] + w["semantic"] * np.maximum(sims, 0.0)
        served = (relevance >= bar[candidates]) | forced[candidates]
        chosen, sims = candidates[served], sims[served]
        # The whole score as Scorer._scored adds it up: its rounded terms in the same order
        # (the order of the result; the row order breaks ties, and rows are by id).
        g = index.group_of[chosen]
        topics = np.round(topic_part[index.topics_of[chosen]], 4)
        semantic = np.round(np.maximum(sims, 0.0), 4)
        total = np.round(
            0 + w["authority"] * authority[g] + w["condition"] * np.round(condition[g], 4)
            + w["layer"] * layer[g] + w["topics"] * topics
            + w["severity"] * index.severity[chosen] + w["semantic"] * semantic,
            4,
        )  # fmt: skip
        order = np.lexsort((chosen, -total))
        picked = chosen[order]
        rows = cat.rows
        terms_of = zip(
            g[order].tolist(), topic_part[index.topics_of[picked]].tolist(),
            sims[order].tolist(), strict=True,
        )  # fmt: skip
        return Ranked(
            [rows[i] for i in picked.tolist()],
            [(group_terms[group], jaccard, sim) for group, jaccard, sim in terms_of],
            int(index.text_chars[picked].min()) if len(picked) else 0,
        )

    def score(self, row: DirectiveRow, similarity: float) -> Scored:
        """The whole score with each term (for the directives that are served)."""
        union = row.topics | self.ctx.topics
        topics = len(row.topics & self.ctx.topics) / len(union) if union else 0.0
        return self._scored(row, self._group(row), topics, similarity)

    @staticmethod
    def _scored(row: DirectiveRow, group: _Group, topics: float, similarity: float) -> Scored:
        _, authority, condition, layer = group
        severity = _severity(row)
        condition, topics = round(condition, 4), round(topics, 4)
        semantic = round(max(0.0, similarity), 4)
        parts = {"authority": authority, "condition": condition, "layer": layer,
                 "topics": topics, "severity": severity, "semantic": semantic}  # fmt: skip
        w = WEIGHTS
        total = (
            0 + w["authority"] * authority + w["condition"] * condition + w["layer"] * layer
            + w["topics"] * topics + w["severity"] * severity + w["semantic"] * semantic
        )  # fmt: skip
        relevance = total - w["severity"] * severity
        return Scored(row, round(total, 4), round(relevance, 4), parts)


def score(row: DirectiveRow, ctx: TaskContext, similarity: float) -> Scored:
    """One directive's score (see :class:`Scorer` for many)."""
    return Scorer(ctx).score(row, similarity)


def similarities(
    vectors: npt.NDArray[np.float32] | None, query: npt.NDArray[np.float32] | None, count: int
) -> npt.NDArray[np.float32]:
    if vectors is None or query is None or vectors.shape[1] != query.shape[0]:
        return np.zeros(count, dtype=np.float32)
    norm = float(np.linalg.norm(query)) or 1.0
    result: npt.NDArray[np.float32] = vectors @ (query / norm)
    return result
