"""The full-text leg alone (issue 31, full text per passage): what ``kg_fulltext_bm25`` ranks
first for each dev-set question on the real corpora, scored like ``bench_quality.py``'s
baselines.

For each question, ``search(mode="fulltext")`` (the leg a hybrid search and a semantic build
fuse with the vectors) ranks the project's nodes; the sections among them are

* ``fts top 5``: the first five sections (gold recall, all-gold), as an agent's search;
* ``fts@B``: packed whole in rank order while they fit B tokens (characters / 4, stopping at
  the first that does not), exactly as ``bm25@B`` packs its ranking.

Read-only: it reads databases ingested by ``kg ingest .`` (``bench/real_corpora.py``), named
by ``--url`` with ``{corpus_}`` for the corpus name with underscores, in tenant ``--tenant``.
``KG_CODE`` (default this checkout) is the kg whose search runs, so the same script measures
another checkout's code (``KG_CODE=/work/main``) on the same databases.

Run: python bench/bench_fulltext_leg.py --url 'postgresql://postgres:@/rank_{corpus_}?host=...'
     --tenant rank [--corpus adr-buy-for-your-school ...] [--budgets 400 800 1600]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CODE = Path(os.environ.get("KG_CODE", HERE.parent))
sys.path[:0] = [str(CODE), str(HERE)]

# kg (and its migrations) first, from KG_CODE: bench_quality puts this checkout first on the
# path when imported, so it is imported after them.
import migrations  # noqa: E402, F401
from kg.config import Scope, Settings  # noqa: E402
from kg.embeddings import HashingEmbedder  # noqa: E402
from kg.runtime import open_runtime  # noqa: E402
from kg.search import search  # noqa: E402

bq = importlib.import_module("bench_quality")
REAL_CORPORA = importlib.import_module("real_corpora").REAL_CORPORA

DEPTH = 200  # ranked nodes a packing reads from, as the baselines' BASELINE_DEPTH


def _recall(gold: tuple[str, ...], got: list[str]) -> tuple[int, bool]:
    hit = sum(g in got for g in gold)
    return hit, hit == len(gold)


async def run(url: str, tenant: str, corpus: str, budgets: list[int]) -> dict[str, object]:
    questions = bq.load_questions(bq.DEV_QUESTIONS, corpora=[corpus])
    settings = Settings(database_url=url, scope=Scope(tenant, corpus), project_root=Path.cwd())
    out: dict[str, list[tuple[int, int, bool]]] = {}
    ms: list[float] = []
    async with open_runtime(settings, url=url, embedder=HashingEmbedder()) as rt:
        text_by_id = dict(await bq.section_texts(rt))
        for q in questions:
            start = time.perf_counter()
            found = await search(rt.app_pool, rt.scope, q.text, mode="fulltext", limit=DEPTH)
            ms.append((time.perf_counter() - start) * 1000)
            ranked = list(bq.returned_sections((h.node_id, None) for h in found.hits))
            ranked = [s for s in ranked if s in text_by_id]
            rows = {"fts top 5": ranked[:5]}
            for b in budgets:
                rows[f"fts@{b}"] = bq.pack(ranked, text_by_id, b)[0]
            for name, got in rows.items():
                hit, every = _recall(q.gold, got)
                out.setdefault(name, []).append((hit, len(q.gold), every))
    summary: dict[str, object] = {
        name: (
            sum(h for h, _, _ in v) / max(1, sum(t for _, t, _ in v)),
            sum(e for _, _, e in v) / len(v),
        )
        for name, v in out.items()
    }
    summary["p50 ms"] = statistics.median(ms)
    summary["questions"] = len(questions)
    return summary


async def main(args: argparse.Namespace) -> None:
    results = {}
    for corpus in args.corpus:
        url = args.url.format(corpus_=corpus.replace("-", "_"))
        results[corpus] = await run(url, args.tenant, corpus, args.budgets)
        print(f"- {corpus}: {results[corpus]['questions']} questions", flush=True)
    names = ["fts top 5", *[f"fts@{b}" for b in args.budgets]]
    print(f"\nkg code: {CODE}\n")
    print("| corpus | " + " | ".join(names) + " | search p50 ms |")
    print("| --- |" + " --- |" * (len(names) + 1))
    for corpus, s in results.items():
        cells = []
        for n in names:
            recall, all_gold = s[n]  # type: ignore[misc]
            cells.append(f"{recall:.2f} / {all_gold:.2f}")
        print(f"| {corpus} | " + " | ".join(cells) + f" | {s['p50 ms']:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="database URL with {corpus_}")
    parser.add_argument("--tenant", default="rank")
    parser.add_argument("--corpus", nargs="+", default=list(REAL_CORPORA))
    parser.add_argument("--budgets", type=int, nargs="+", default=[400, 800, 1600])
    asyncio.run(main(parser.parse_args()))
