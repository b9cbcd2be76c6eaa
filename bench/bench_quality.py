"""Context quality: do the calls an agent makes return the sections that answer its question,
in a budget that fits a prompt? (issue 13)

Two spec corpora written for this benchmark live in ``bench/quality/`` (``fieldnote``: a
BMad-method product with PRD, architecture, epics, stories, ADRs and retrospectives;
``lumen``: a Markdown API reference), each inside a repository that also holds distractors
(method templates, agent files, archived and draft copies with outdated values, stand-up notes,
chat logs, support transcripts, unrelated runbooks and posts). Each corpus is ingested whole,
as a user would (``ingest_paths`` on the project root), with the MiniLM embedder, into a fresh
database. ``bench/quality/questions.yaml`` holds the questions and their gold sections.

For each question:

* ``semantic@B``: ``build_context_graph`` (the application function the MCP tool calls) in
  semantic mode with ``token_budget=B``, for each budget;
* ``search``: ``query_knowledge_graph`` (hybrid, top 5), as an agent looks for anchors;
* ``bm25@B`` (baseline): plain BM25 over every section of the project (heading + text), in
  Python, taking whole sections in rank order while they fit B tokens;
* ``hybrid@B`` (baseline): the same BM25 ranking fused with MiniLM's (each section's own
  vector, cosine) by reciprocal rank fusion (k=60), packed the same way.

``--real`` adds the four real repositories of issue 31 (``bench/real_corpora.py``: extracted
from ``../shared/corpora`` at run time, each ingested whole by ``kg ingest .`` into a kept
database), with the questions in ``bench/quality/dev-corpora.yaml``. Every corpus is reported
on its own, and ``mean`` is the unweighted mean over corpora (the team's two corpora count as
much as any real one, no more).

Reported per corpus and overall: gold recall (fraction of gold sections returned), all-gold
rate (questions with every gold section returned), MRR of the first gold section in the result
order, the rate at which any gold or ``acceptable`` section (a restatement that also answers)
came back, tokens (characters / 4) of the rendering and of the JSON structured result (mean and
max), and latency p50/p95 in ms. ``--json FILE`` writes every question's returned ids too.

Run: python bench/bench_quality.py [--real] [--budgets 400 800 1600] [--modes semantic hybrid bm25]
     [--root DIR --questions FILE --corpus NAME]  (a held-out corpus: ROOT/NAME/...)
     [--corpus fieldnote lumen] [--subset N] [--runs R] [--json FILE] [--embedder minilm]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.config import Scope, Settings
from kg.context.render import estimate_tokens
from kg.context.service import build_context_graph, parse_request
from kg.embeddings import EmbeddingProvider, provider_from_config
from kg.graph_queries import query_knowledge_graph
from kg.ingest.service import ingest_paths
from kg.runtime import Runtime, open_runtime

HERE = Path(__file__).resolve().parent
QUALITY = HERE / "quality"
QUESTIONS = QUALITY / "questions.yaml"
CORPORA = ("fieldnote", "lumen")
BUDGETS = (400, 800, 1600)
MODES = ("semantic", "hybrid", "bm25", "search")
SEARCH_LIMIT = 5
RRF_K = 60
BASELINE_DEPTH = 200  # ranked sections a baseline packs from
DEV_QUESTIONS = QUALITY / "dev-corpora.yaml"


# -- questions and matching -------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    qid: str
    corpus: str
    text: str
    gold: tuple[str, ...]
    acceptable: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


def load_questions(path: Path = QUESTIONS, corpora: Iterable[str] = CORPORA) -> list[Question]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = []
    for corpus in corpora:
        for q in data.get(corpus, ()):
            out.append(
                Question(
                    q["id"],
                    corpus,
                    q["q"],
                    tuple(q["gold"]),
                    tuple(q.get("acceptable", ())),
                    tuple(q.get("tags", ())),
                )
            )
    return out


def subset(questions: Sequence[Question], n: int | None) -> list[Question]:
    """``n`` questions spread evenly over the list (so over both corpora), deterministic."""
    if not n or n >= len(questions):
        return list(questions)
    step = len(questions) / n
    return [questions[int(i * step)] for i in range(n)]


_SECTION_OF = re.compile(r"^(?:section|passage|chunk):(?P<path>[^#]+)#(?P<anchor>[\w-]+)")


def section_of(node_id: str, properties: dict[str, Any] | None = None) -> str | None:
    """The section a returned node stands for: a section itself, or a passage/chunk of one
    (an id like ``passage:docs/a.md#anchor/2`` or ``section:docs/a.md#anchor::p2``, or a node
    whose properties name its ``section_id``). Adapt here when the builder's ids change."""
    if properties and isinstance(properties.get("section_id"), str):
        return str(properties["section_id"])
    m = _SECTION_OF.match(node_id)
    return f"section:{m['path']}#{m['anchor']}" if m else None


def returned_sections(nodes: Iterable[tuple[str, dict[str, Any] | None]]) -> list[str]:
    """Distinct sections in result order."""
    seen: dict[str, None] = {}
    for node_id, props in nodes:
        s = section_of(node_id, props)
        if s is not None:
            seen.setdefault(s, None)
    return list(seen)


@dataclass
class Outcome:
    qid: str
    corpus: str
    method: str
    returned: list[str]
    gold_hit: int
    gold_total: int
    rank: int | None  # 1-based rank of the first gold section among returned sections
    any_answer: bool  # a gold or acceptable section came back
    render_tokens: int | None
    json_tokens: int | None
    ms: list[float] = field(default_factory=list)


def score(
    q: Question,
    method: str,
    sections: list[str],
    render_tokens: int | None,
    json_tokens: int | None,
    ms: float,
) -> Outcome:
    gold = set(q.gold)
    hit = gold & set(sections)
    rank = next((i + 1 for i, s in enumerate(sections) if s in gold), None)
    answer = bool(hit) or bool(set(q.acceptable) & set(sections))
    return Outcome(
        q.qid, q.corpus, method, sections, len(hit), len(gold), rank, answer,
        render_tokens, json_tokens, [ms],
    )  # fmt: skip


# -- BM25 baseline -----------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")
STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "my",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "this",
        "to",
        "up",
        "us",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
    ]
)


def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP]


class BM25:
    """Okapi BM25 (k1=1.2, b=0.75) over (id, text) documents: the plain baseline."""

    def __init__(self, docs: Sequence[tuple[str, str]], k1: float = 1.2, b: float = 0.75):
        self.ids = [d[0] for d in docs]
        self.texts = [d[1] for d in docs]
        self.tfs = [Counter(tokens(t)) for t in self.texts]
        self.lens = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lens) / max(1, len(self.lens))
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {w: math.log(1 + (n - c + 0.5) / (c + 0.5)) for w, c in df.items()}
        self.k1, self.b = k1, b

    def ranked(self, query: str, k: int) -> list[str]:
        """The ids of the ``k`` best-scoring documents, best first (ties by id)."""
        return [self.ids[i] for i in self.top(query, k)]

    def top(self, query: str, k: int) -> list[int]:
        q = set(tokens(query))
        scores = []
        for i, tf in enumerate(self.tfs):
            s = 0.0
            norm = self.k1 * (1 - self.b + self.b * self.lens[i] / self.avg)
            for w in q:
                f = tf.get(w)
                if f:
                    s += self.idf[w] * f * (self.k1 + 1) / (f + norm)
            if s > 0:
                scores.append((-s, self.ids[i], i))
        return [i for _, _, i in sorted(scores)[:k]]


def pack(ranked: Iterable[str], text_by_id: dict[str, str], budget: int) -> tuple[list[str], int]:
    """Whole sections in rank order while they fit ``budget`` tokens (characters / 4)."""
    taken: list[str] = []
    used = 0
    for node_id in ranked:
        cost = estimate_tokens(f"{node_id}\n{text_by_id[node_id]}")
        if used + cost > budget:
            break
        taken.append(node_id)
        used += cost
    return taken, used


def rrf(*rankings: Sequence[str], k: int = RRF_K) -> list[str]:
    """Reciprocal rank fusion of id rankings (ties by id)."""
    score: dict[str, float] = {}
    for ranking in rankings:
        for r, node_id in enumerate(ranking, 1):
            score[node_id] = score.get(node_id, 0.0) + 1.0 / (k + r)
    return sorted(score, key=lambda i: (-score[i], i))


async def vector_ranked(rt: Runtime, text: str, k: int) -> list[str]:
    """Sections by cosine distance of their own MiniLM vector to the question's."""
    vector = rt.embedder.embed([text])[0]
    rows = await rt.system_pool.fetch(
        "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND node_id LIKE 'section:%' AND embedding IS NOT NULL "
        "ORDER BY embedding <=> $3::vector, node_id LIMIT $4",
        rt.scope.tenant_id,
        rt.scope.project_id,
        "[" + ",".join(f"{x:.7f}" for x in vector) + "]",
        k,
    )
    return [r["node_id"] for r in rows]


async def section_texts(rt: Runtime) -> list[tuple[str, str]]:
    rows = await rt.system_pool.fetch(
        "SELECT node_id, name, content FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND node_id LIKE 'section:%' ORDER BY node_id",
        rt.scope.tenant_id,
        rt.scope.project_id,
    )
    return [(r["node_id"], f"{r['name']}\n{r['content']}") for r in rows]


# -- running ------------------------------------------------------------------------------------


async def ingest_corpus(rt: Runtime) -> dict[str, int]:
    """Ingest the whole project (specs and distractors) and project it."""
    report = await ingest_paths(rt)
    if report.errors:
        raise SystemExit(f"ingest problems: {[str(p) for p in report.errors[:5]]}")
    if report.masked:  # the API reference's documented example keys, as a user would see them
        print(f"ingest warnings: secrets removed from {len(report.masked)} files", flush=True)
    await rt.catch_up()
    return {"files": len(report.changed), **await corpus_sizes(rt)}


async def corpus_sizes(rt: Runtime) -> dict[str, int]:
    row = await rt.system_pool.fetchrow(
        "SELECT count(DISTINCT split_part(node_id, '#', 1)) FILTER (WHERE node_id LIKE "
        "'section:%') AS files, count(*) FILTER (WHERE node_id LIKE 'section:%') AS sections, "
        "coalesce(sum(length(content)) FILTER (WHERE node_id LIKE 'section:%'), 0) AS chars "
        "FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2",
        rt.scope.tenant_id,
        rt.scope.project_id,
    )
    assert row is not None
    return {
        "files_with_sections": row["files"],
        "sections": row["sections"],
        "tokens": (row["chars"] + 3) // 4,
    }


async def check_gold(rt: Runtime, questions: Sequence[Question]) -> None:
    """Fail loudly when a gold or acceptable id is not a node of the ingested project."""
    wanted = sorted({g for q in questions for g in (*q.gold, *q.acceptable)})
    rows = await rt.system_pool.fetch(
        "SELECT node_id FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2 "
        "AND node_id = ANY($3::text[])",
        rt.scope.tenant_id,
        rt.scope.project_id,
        wanted,
    )
    missing = sorted(set(wanted) - {r["node_id"] for r in rows})
    if missing:
        raise SystemExit(
            f"{len(missing)} gold/acceptable ids are not nodes after ingestion: {missing}"
        )


async def run_question(
    rt: Runtime, q: Question, method: str, bm25: BM25 | None, text_by_id: dict[str, str]
) -> Outcome:
    start = time.perf_counter()
    if method.startswith("semantic@"):
        budget = int(method.split("@")[1])
        graph = await build_context_graph(
            rt, parse_request(mode="semantic", task=q.text, token_budget=budget)
        )
        ms = (time.perf_counter() - start) * 1000
        nodes = [(n.node_id, n.properties) for n in graph.nodes]
        data = graph.to_dict()
        return score(
            q, method, returned_sections(nodes), graph.token_estimate,
            estimate_tokens(json.dumps(data, ensure_ascii=False)), ms,
        )  # fmt: skip
    if method == "search":
        found = await query_knowledge_graph(rt, q.text, mode="hybrid", limit=SEARCH_LIMIT)
        ms = (time.perf_counter() - start) * 1000
        nodes = [(r.node_id, None) for r in found.results]
        return score(
            q, method, returned_sections(nodes), None,
            estimate_tokens(json.dumps(found.model_dump(), ensure_ascii=False)), ms,
        )  # fmt: skip
    if method.startswith(("bm25@", "hybrid@")):
        assert bm25 is not None
        budget = int(method.split("@")[1])
        ranked = bm25.ranked(q.text, BASELINE_DEPTH)
        if method.startswith("hybrid@"):
            ranked = rrf(ranked, await vector_ranked(rt, q.text, BASELINE_DEPTH))
        ids, used = pack(ranked, text_by_id, budget)
        ms = (time.perf_counter() - start) * 1000
        return score(q, method, ids, used, None, ms)
    raise ValueError(f"unknown method {method!r}")


def methods_for(modes: Sequence[str], budgets: Sequence[int]) -> list[str]:
    out: list[str] = []
    for m in modes:
        if m in ("semantic", "bm25", "hybrid"):
            out += [f"{m}@{b}" for b in budgets]
        else:
            out.append(m)
    return out


async def evaluate(
    rt: Runtime, questions: Sequence[Question], methods: Sequence[str], runs: int = 1
) -> list[Outcome]:
    """Every question through every method; recall from the first run, latency from all."""
    sections = await section_texts(rt)
    bm25 = BM25(sections) if any(m.startswith(("bm25@", "hybrid@")) for m in methods) else None
    text_by_id = dict(sections)
    outcomes: list[Outcome] = []
    for method in methods:
        for q in questions:
            first = await run_question(rt, q, method, bm25, text_by_id)
            for _ in range(runs - 1):
                again = await run_question(rt, q, method, bm25, text_by_id)
                first.ms += again.ms
            outcomes.append(first)
    return outcomes


# -- reporting ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    questions: int
    recall: float
    all_gold: float
    mrr: float
    any_answer: float
    render_mean: float | None
    render_max: int | None
    json_mean: float | None
    json_max: int | None
    p50: float
    p95: float


def _pct(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(pct / 100 * (len(ordered) - 1))))]


def summarise(outcomes: Sequence[Outcome]) -> Summary:
    n = len(outcomes)
    render = [o.render_tokens for o in outcomes if o.render_tokens is not None]
    js = [o.json_tokens for o in outcomes if o.json_tokens is not None]
    ms = [t for o in outcomes for t in o.ms]
    return Summary(
        n,
        sum(o.gold_hit for o in outcomes) / max(1, sum(o.gold_total for o in outcomes)),
        sum(o.gold_hit == o.gold_total for o in outcomes) / n,
        sum(1 / o.rank for o in outcomes if o.rank) / n,
        sum(o.any_answer for o in outcomes) / n,
        statistics.fmean(render) if render else None,
        max(render) if render else None,
        statistics.fmean(js) if js else None,
        max(js) if js else None,
        _pct(ms, 50),
        _pct(ms, 95),
    )


def _num(v: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if v is None else fmt.format(v)


def table(outcomes: Sequence[Outcome], methods: Sequence[str], corpora: Sequence[str]) -> str:
    lines = [
        "| corpus | call | questions | gold recall | all-gold | MRR | gold or restatement "
        "| render tokens mean / max | JSON tokens mean / max | p50 ms | p95 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for corpus in [*corpora, "all"]:
        for m in methods:
            sel = [o for o in outcomes if o.method == m and corpus in ("all", o.corpus)]
            if not sel:
                continue
            s = summarise(sel)
            lines.append(
                f"| {corpus} | {m} | {s.questions} | {s.recall:.2f} | {s.all_gold:.2f} "
                f"| {s.mrr:.2f} | {s.any_answer:.2f} "
                f"| {_num(s.render_mean)} / {_num(s.render_max)} "
                f"| {_num(s.json_mean)} / {_num(s.json_max)} | {s.p50:.1f} | {s.p95:.1f} |"
            )
    return "\n".join(lines)


def pivot(
    outcomes: Sequence[Outcome], methods: Sequence[str], corpora: Sequence[str], what: str
) -> str:
    """One row per corpus, one column per call: gold recall or all-gold; ``mean``: the
    unweighted mean over corpora; ``mean (real)``: over the real repositories only."""
    real = [c for c in corpora if c not in CORPORA]
    lines = [
        f"| {what} | " + " | ".join(methods) + " |",
        "| --- |" + " ---: |" * len(methods),
    ]

    def value(corpus: str, m: str) -> float | None:
        sel = [o for o in outcomes if o.method == m and o.corpus == corpus]
        if not sel:
            return None
        s = summarise(sel)
        return s.recall if what == "gold recall" else s.all_gold

    rows: list[tuple[str, list[str]]] = [
        (c, list(corpora[i : i + 1])) for i, c in enumerate(corpora)
    ]
    rows.append(("mean", list(corpora)))
    if real and len(real) < len(corpora):
        rows.append(("mean (real)", real))
    for label, group in rows:
        cells = []
        for m in methods:
            vals = [v for c in group if (v := value(c, m)) is not None]
            cells.append(f"{statistics.fmean(vals):.2f}" if vals else "-")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tag_table(
    outcomes: Sequence[Outcome], questions: Sequence[Question], methods: Sequence[str]
) -> str:
    by_id = {q.qid: q for q in questions}
    tags = sorted({t for q in questions for t in q.tags})
    lines = [
        "| call | "
        + " | ".join(f"{t} (n={sum(t in q.tags for q in questions)})" for t in tags)
        + " |",
        "| --- |" + " ---: |" * len(tags),
    ]
    for m in methods:
        cells = []
        for t in tags:
            sel = [o for o in outcomes if o.method == m and t in by_id[o.qid].tags]
            cells.append(f"{summarise(sel).recall:.2f}" if sel else "-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# -- main ------------------------------------------------------------------------------------------


async def run_corpus(
    url: str, corpus: str, questions: Sequence[Question], methods: Sequence[str], runs: int,
    embedder: EmbeddingProvider, root: Path = QUALITY,
) -> tuple[dict[str, int], list[Outcome], float]:  # fmt: skip
    """Ingest ``root / corpus`` into ``url`` and put every question through every method."""
    settings = Settings(
        database_url=url, scope=Scope("quality", corpus), project_root=root / corpus
    )
    async with open_runtime(settings, url=url, embedder=embedder) as rt:
        start = time.perf_counter()
        sizes = await ingest_corpus(rt)
        ingest_s = time.perf_counter() - start
        await check_gold(rt, questions)
        outcomes = await evaluate(rt, questions, methods, runs)
    return sizes, outcomes, ingest_s


def ingest_fingerprint(embedder: EmbeddingProvider, root: Path = QUALITY) -> str:
    """What the ingested graph depends on: the corpora, the write and projection code, the
    embedder. A kept database (``--reuse``) is reused only while this is unchanged, so a
    ranking change reruns in seconds and an ingest change is never measured on a stale graph."""
    import hashlib

    digest = hashlib.sha256(embedder.model_id.encode())
    code = HERE.parent
    folders = [code / f for f in ("kg/ingest", "kg/projections", "kg/embeddings", "kg/events")]
    for folder in [*folders, root]:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(folder.parent)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def database_for(args: argparse.Namespace, embedder: EmbeddingProvider) -> tuple[str, str | None]:
    """A fresh database, or with ``--reuse`` a throwaway copy of a kept, already ingested one
    (the builds log context graphs, which must not pile up in the kept one)."""
    from common import fresh_database, kept_database, mark_complete, scratch_copy

    if not args.reuse:
        return fresh_database(), None
    name = f"kg_quality_{ingest_fingerprint(embedder, args.root)}"
    url, complete = kept_database(name)
    if not complete:
        asyncio.run(ingest_all(url, args.corpus, embedder, args.root))
        mark_complete(url, name)
    return scratch_copy(url), name


async def ingest_all(
    url: str, corpora: Sequence[str], embedder: EmbeddingProvider, root: Path = QUALITY
) -> None:
    for corpus in corpora:
        settings = Settings(
            database_url=url, scope=Scope("quality", corpus), project_root=root / corpus
        )
        async with open_runtime(settings, url=url, embedder=embedder) as rt:
            await ingest_corpus(rt)


async def run_real_corpus(
    corpus: str, questions: Sequence[Question], methods: Sequence[str], runs: int,
    embedder: EmbeddingProvider,
) -> tuple[dict[str, int], list[Outcome]]:  # fmt: skip
    """Put every question through every method on a throwaway copy of the corpus's kept
    database (ingested by ``kg ingest .``; the builds log context graphs)."""
    import real_corpora
    from common import drop_database, scratch_copy

    kept = real_corpora.kept_ingested(corpus, embedder.model_id)
    url = scratch_copy(kept)
    settings = Settings(
        database_url=url,
        scope=Scope(real_corpora.TENANT, corpus),
        project_root=real_corpora.extract(corpus),
    )
    try:
        async with open_runtime(settings, url=url, embedder=embedder) as rt:
            sizes = await corpus_sizes(rt)
            await check_gold(rt, questions)
            outcomes = await evaluate(rt, questions, methods, runs)
    finally:
        drop_database(url)
    return sizes, outcomes


async def main(args: argparse.Namespace, embedder: EmbeddingProvider, url: str) -> None:
    from common import machine

    questions = subset(load_questions(args.questions, corpora=args.corpus), args.subset)
    methods = methods_for(args.modes, args.budgets)
    all_outcomes: list[Outcome] = []
    print(f"Machine: {machine()}; embedder {embedder.model_id}\n")
    for corpus in args.real:
        qs = subset(load_questions(DEV_QUESTIONS, corpora=[corpus]), args.subset)
        sizes, outcomes = await run_real_corpus(corpus, qs, methods, args.runs, embedder)
        multi = sum(len(q.gold) > 1 for q in qs)
        print(
            f"- {corpus} (real, `kg ingest .`): {sizes['files_with_sections']:,} files with "
            f"sections, {sizes['sections']:,} sections, {sizes['tokens']:,} tokens of section "
            f"text; {len(qs)} questions ({multi} need two or more sections)",
            flush=True,
        )
        all_outcomes += outcomes
        questions += qs
    for corpus in args.corpus:
        qs = [q for q in questions if q.corpus == corpus]
        if not qs:
            continue
        sizes, outcomes, ingest_s = await run_corpus(
            url, corpus, qs, methods, args.runs, embedder, args.root
        )
        multi = sum(len(q.gold) > 1 for q in qs)
        print(
            f"- {corpus}: {sizes['files']} files ingested, {sizes['sections']:,} sections, "
            f"{sizes['tokens']:,} tokens of section text; ingest + embed {ingest_s:.0f} s; "
            f"{len(qs)} questions ({multi} need two or more sections)",
            flush=True,
        )
        all_outcomes += outcomes
    corpora = [*args.real, *args.corpus]
    print()
    print(pivot(all_outcomes, methods, corpora, "gold recall"))
    print()
    print(pivot(all_outcomes, methods, corpora, "all-gold"))
    print()
    print(table(all_outcomes, methods, corpora))
    print("\nGold recall by question tag (all corpora):\n")
    print(tag_table(all_outcomes, questions, methods))
    if args.json:
        write_json(
            args.json,
            json.dumps(
                {
                    "methods": methods,
                    "summary": {
                        f"{c}/{m}": summarise(
                            [o for o in all_outcomes if o.method == m and c in ("all", o.corpus)]
                        ).__dict__
                        for c in [*corpora, "all"]
                        for m in methods
                    },
                    "outcomes": [o.__dict__ for o in all_outcomes],
                },
                indent=1,
            ),
        )


def write_json(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    parser.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    parser.add_argument(
        "--root", type=Path, default=QUALITY,
        help="folder holding one folder per corpus (default: the benchmark's own, "
        "bench/quality); a held-out check points it at a corpus nobody here wrote",
    )  # fmt: skip
    parser.add_argument(
        "--questions", type=Path, default=None,
        help="questions and gold sections (default: ROOT/questions.yaml)",
    )  # fmt: skip
    parser.add_argument("--corpus", nargs="*", default=list(CORPORA))
    parser.add_argument(
        "--real", nargs="*", default=None,
        help="also the real dev-set repositories (issue 31; all four when none is named), "
        "each ingested by `kg ingest .` into a kept database",
    )  # fmt: skip
    parser.add_argument("--subset", type=int, default=None, help="N questions spread evenly")
    parser.add_argument("--runs", type=int, default=1, help="repeat each call for latency")
    parser.add_argument("--embedder", default="minilm", help="KG_EMBEDDER (default minilm)")
    parser.add_argument("--json", help="write every question's outcome to this file")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="keep the ingested corpora in bench/out/pg and reuse them while the corpora and "
        "the ingest code are unchanged (ranking changes rerun in seconds)",
    )
    cli = parser.parse_args()
    cli.questions = cli.questions or cli.root / "questions.yaml"
    if cli.real is not None:
        from real_corpora import REAL_CORPORA, available

        if (why := available()) is not None:
            parser.error(why)
        cli.real = cli.real or list(REAL_CORPORA)
    else:
        cli.real = []
    for name in cli.corpus:
        if not (cli.root / name).is_dir():
            parser.error(f"corpus {name!r}: no folder {cli.root / name} (see --root)")
    if not cli.questions.is_file():
        parser.error(f"no questions file {cli.questions} (see --questions)")
    os.environ.setdefault("KG_EMBEDDER", cli.embedder)
    provider = provider_from_config(cli.embedder)
    provider.embed(["warm up"])
    db_url, kept = database_for(cli, provider)
    try:
        asyncio.run(main(cli, provider, db_url))
    finally:
        if kept is not None:
            from common import drop_database

            drop_database(db_url)
