"""Entity extraction quality, and cross-cutting chains with and without entities (issue 22).

Corpus: ``bench/entities/corpus``, the reference of an invented billing API (37 Markdown
files: resources, concepts, guides) with distractors a real reference has: object fields in
backticks (``charge.captured``, ``invoice.amount_due``), file names, ``**Note:**`` labels,
shouted words, endpoints split over table cells, curl commands in code blocks.
``bench/entities/labels.yaml`` holds hand labels (the rule is written at its top).

1. **Extraction** (no database): every file parsed with the corpus's schema map (all presets).
   Reported: entity precision/recall over the graph's entity nodes (what ingestion merges), the
   same per file (every (file, entity) pair, a stricter view: an entity a file names only in
   plain words counts as missed there), and relationship-edge precision/recall, with the false
   positives and misses listed.
2. **Chains**: ``bench/entities/chains.yaml`` questions need every section of a chain
   (Subscription -> Invoice -> Charge -> webhook ...). The corpus is ingested twice into a fresh
   database, with the entity presets and without them (a copy without ``kg-schema.yaml``); each question is
   a semantic ``build_context_graph`` at a token budget (800 unless ``--budgets``), scored like
   ``bench_quality.py``: gold recall, all-gold rate, a gold-or-acceptable section returned,
   rendering tokens.

Run: python bench/bench_entities.py [--budgets 800 1600] [--embedder minilm] [--skip-chains]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.config import Scope, Settings
from kg.context.service import build_context_graph, parse_request
from kg.embeddings import EmbeddingProvider, provider_from_config
from kg.ingest.markdown import parse_text
from kg.ingest.project import discover_markdown
from kg.ingest.schema_map import load_schema_map
from kg.ingest.service import ingest_paths
from kg.runtime import open_runtime

HERE = Path(__file__).resolve().parent / "entities"
CORPUS = HERE / "corpus"


# -- 1. extraction ----------------------------------------------------------------------------


def extracted(root: Path) -> tuple[dict[str, set[str]], set[tuple[str, str, str]]]:
    """Per file, the entity ids its sections name; and every relationship edge."""
    schema = load_schema_map(root)
    per_file: dict[str, set[str]] = {}
    relations: set[tuple[str, str, str]] = set()
    for rel in discover_markdown(root):
        doc = parse_text(rel, (root / rel).read_text(encoding="utf-8"), schema)
        entities = {n.node_id for n in doc.nodes if "Entity" in n.labels}
        per_file[rel] = entities
        relations |= {
            (e.edge_type, e.from_node, e.to_node) for e in doc.edges if "sources" in e.properties
        }
    return per_file, relations


def prf(found: set[Any], gold: set[Any]) -> tuple[float, float, int, int, int]:
    tp = len(found & gold)
    return tp / max(1, len(found)), tp / max(1, len(gold)), tp, len(found), len(gold)


def extraction_report() -> dict[str, Any]:
    labels = yaml.safe_load((HERE / "labels.yaml").read_text(encoding="utf-8"))
    gold_files: dict[str, set[str]] = {f: set(v["entities"]) for f, v in labels["files"].items()}
    gold_rel = {tuple(r) for r in labels["relations"]}
    per_file, relations = extracted(CORPUS)
    assert set(per_file) == set(gold_files), set(per_file) ^ set(gold_files)
    nodes = set().union(*per_file.values())
    gold_nodes = set().union(*gold_files.values())
    pairs = {(f, e) for f, es in per_file.items() for e in es}
    gold_pairs = {(f, e) for f, es in gold_files.items() for e in es}
    return {
        "files": len(per_file),
        "nodes": prf(nodes, gold_nodes),
        "mentions": prf(pairs, gold_pairs),
        "relations": prf(relations, gold_rel),
        "node_fp": sorted(nodes - gold_nodes),
        "node_fn": sorted(gold_nodes - nodes),
        "rel_fp": sorted(relations - gold_rel),
        "rel_fn": sorted(gold_rel - relations),
    }


def parse_ms(root: Path, runs: int = 5) -> float:
    """Median milliseconds to parse every file of ``root`` with its schema map."""
    schema = load_schema_map(root)
    files = [(rel, (root / rel).read_text(encoding="utf-8")) for rel in discover_markdown(root)]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for rel, text in files:
            parse_text(rel, text, schema)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def print_extraction(r: dict[str, Any]) -> None:
    print(f"Extraction over {r['files']} files\n")
    print("| measure | precision | recall | correct / extracted / labelled |")
    print("| --- | ---: | ---: | --- |")
    for key, label in (
        ("nodes", "entity nodes"),
        ("mentions", "entities per file"),
        ("relations", "relationship edges"),
    ):
        p, rc, tp, found, gold = r[key]
        print(f"| {label} | {p:.3f} | {rc:.3f} | {tp} / {found} / {gold} |")
    print(f"\nentity false positives: {r['node_fp']}")
    print(f"entity misses: {r['node_fn']}")
    print(f"relationship false positives: {r['rel_fp']}")
    print(f"relationship misses ({len(r['rel_fn'])}): {r['rel_fn']}")


# -- 2. chains --------------------------------------------------------------------------------


def without_entities() -> Path:
    """A copy of the corpus without its schema map (`kg-schema.yaml`): headings and links only."""
    target = Path(tempfile.mkdtemp(prefix="kg-bench-noentities-"))
    shutil.copytree(
        CORPUS, target / "corpus", ignore=shutil.ignore_patterns(".kg", "kg-schema.yaml")
    )
    return target / "corpus"


async def run_chains(
    url: str, embedder: EmbeddingProvider, budgets: list[int]
) -> dict[str, dict[int, dict[str, float]]]:
    questions = yaml.safe_load((HERE / "chains.yaml").read_text(encoding="utf-8"))
    plain = without_entities()
    results: dict[str, dict[int, dict[str, float]]] = {}
    try:
        # The baseline first: first-ingest warm-up costs land on it, not on the entities.
        for variant, root in (("headings only", plain), ("with entities", CORPUS)):
            scope = Scope("entities", variant.replace(" ", "-"))
            settings = Settings(database_url=url, scope=scope, project_root=root)
            async with open_runtime(settings, url=url, embedder=embedder) as rt:
                start = time.perf_counter()
                report = await ingest_paths(rt)
                assert not report.problems, report.problems[:3]
                print(
                    f"- {variant}: {len(report.changed)} files, {report.nodes_asserted} nodes, "
                    f"{report.edges_asserted} edges, ingest {time.perf_counter() - start:.1f} s"
                )
                results[variant] = {}
                for budget in budgets:
                    results[variant][budget] = await _score(rt, questions, budget)
    finally:
        shutil.rmtree(plain.parent, ignore_errors=True)
    return results


async def _score(rt: Any, questions: list[dict[str, Any]], budget: int) -> dict[str, float]:
    hits = total = all_gold = answered = 0
    tokens: list[int] = []
    ms: list[float] = []
    for q in questions:
        start = time.perf_counter()
        graph = await build_context_graph(
            rt, parse_request(mode="semantic", task=q["q"], token_budget=budget)
        )
        ms.append((time.perf_counter() - start) * 1000)
        returned = {n.node_id for n in graph.nodes}
        gold = set(q["gold"])
        hits += len(gold & returned)
        total += len(gold)
        all_gold += gold <= returned
        answered += bool(returned & (gold | set(q.get("acceptable", []))))
        tokens.append(graph.token_estimate)
    n = len(questions)
    return {
        "questions": n,
        "gold_recall": hits / total,
        "all_gold": all_gold / n,
        "answered": answered / n,
        "tokens_mean": statistics.fmean(tokens),
        "tokens_max": max(tokens),
        "ms_p50": statistics.median(ms),
    }


def print_chains(results: dict[str, dict[int, dict[str, float]]]) -> None:
    print(
        "\n| graph | budget | gold recall | all gold | gold or guide | tokens mean / max | p50 ms |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- | ---: |")
    for variant, by_budget in results.items():
        for budget, s in by_budget.items():
            print(
                f"| {variant} | {budget} | {s['gold_recall']:.2f} | {s['all_gold']:.2f} | "
                f"{s['answered']:.2f} | {s['tokens_mean']:.0f} / {s['tokens_max']:.0f} | "
                f"{s['ms_p50']:.0f} |"
            )


async def main(args: argparse.Namespace) -> None:
    from common import fresh_database, machine

    print(f"Machine: {machine()}\n")
    print_extraction(extraction_report())
    plain = without_entities()
    try:
        with_ms, without_ms = parse_ms(CORPUS), parse_ms(plain)
    finally:
        shutil.rmtree(plain.parent, ignore_errors=True)
    print(
        f"\nparse, all 37 files, median of 5: {with_ms:.1f} ms with entities, "
        f"{without_ms:.1f} ms without"
    )
    if args.skip_chains:
        return
    os.environ.setdefault("KG_EMBEDDER", args.embedder)
    embedder = provider_from_config(args.embedder)
    embedder.embed(["warm up"])
    print(f"\nChains ({embedder.model_id}):\n")
    print_chains(await run_chains(fresh_database(), embedder, args.budgets))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[800])
    parser.add_argument("--embedder", default="minilm", help="KG_EMBEDDER (default minilm)")
    parser.add_argument("--skip-chains", action="store_true", help="extraction figures only")
    asyncio.run(main(parser.parse_args()))
