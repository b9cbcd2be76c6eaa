"""MiniLM on ONNX Runtime (issue 34, item 1): word pieces per second and cosine to the torch
reference, on real sections, for each variant kg can run.

Texts: ``--texts`` (default 2,000) Section texts exactly as ingestion embeds them (heading path,
then content; ``kg.embeddings.cache.embedding_text``), parsed from the real corpora in
``../shared/corpora/`` (``--corpora``, extracted to a scratch folder under /tmp, never into the
repository), shuffled with a fixed seed. Rows:

* ``torch``: sentence-transformers' ``encode(normalize_embeddings=True)`` on the packaged model
  with ``torch.set_num_threads(--threads)``: the reference every other row is compared with;
* ``fp32`` and ``int8``: :class:`kg.embeddings.minilm.MiniLMEmbedder` with that variant (the
  exports from ``python -m kg.embeddings.onnx_export --variant ...``, made here if missing),
  ``--threads`` intra-op threads.

Per row: wall time of one ``embed`` of all the texts (median of ``--runs`` after a warm-up),
word pieces per second (the tokenizer's pieces, truncated at 256, without padding), and the
cosine of each vector to the reference's: minimum, 1st percentile and mean. ``--query`` adds
the latency of embedding one short query (p50/p95 over 200 calls), as the semantic build does.

Run: python bench/bench_onnx.py [--texts 2000] [--runs 3] [--threads 2] [--rows torch fp32 int8]
(under ``flock /tmp/kg-heavy.lock``).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.breadcrumbs import breadcrumb
from kg.embeddings.cache import embedding_text
from kg.embeddings.minilm import MiniLMEmbedder, packaged_model_path
from kg.ingest.markdown import parse_markdown
from kg.ingest.schema_map import load_schema_map

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
SCRATCH = Path("/tmp/kg-bench-corpora")
QUERIES = [
    "where do we decide which docstring style to enforce?",
    "what must up do when the compose service has no build section?",
    "retry policy for the payment gateway",
    "how are feature folders numbered",
]


def corpus_root(name: str) -> Path:
    """The extracted corpus (extracted once into /tmp)."""
    root = SCRATCH / name
    if not root.is_dir():
        SCRATCH.mkdir(parents=True, exist_ok=True)
        with tarfile.open(CORPORA / f"{name}.tar.gz") as archive:
            archive.extractall(SCRATCH, filter="data")
    return root


def section_texts(corpora: list[str], count: int, seed: int = 7) -> list[str]:
    texts = []
    for name in corpora:
        root = corpus_root(name)
        schema = load_schema_map(root)
        for path in sorted(root.rglob("*.md")):
            for node in parse_markdown(root, path, schema=schema).nodes:
                if node.node_type == "Section" and node.content:
                    place = breadcrumb(node.node_id, node.name, node.properties or {})
                    texts.append(embedding_text(node.name, node.content, place))
    random.Random(seed).shuffle(texts)
    return texts[:count]


def timed(fn: object, runs: int) -> tuple[np.ndarray, float]:
    assert callable(fn)
    result = fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return np.asarray(result, dtype=np.float64), statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", nargs="+", default=["torch", "fp32", "int8"])
    parser.add_argument("--corpora", nargs="+", default=["speckit-deacon", "bmad-docvet"])
    parser.add_argument("--query", action="store_true", help="also time one-query embeddings")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    texts = section_texts(args.corpora, args.texts)
    tokenizer = MiniLMEmbedder(threads=args.threads)
    tokenizer.load()
    pieces = sum(len(tokenizer._model().tokenizer.encode(t).ids) for t in texts)
    print(f"{len(texts)} sections from {', '.join(args.corpora)}: {pieces} word pieces")
    print(f"load average before: {os.getloadavg()}")
    reference = None
    if "torch" in args.rows:
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(args.threads)
        model = SentenceTransformer(str(packaged_model_path()), device="cpu")

        def encode() -> np.ndarray:
            return np.asarray(
                model.encode(texts, normalize_embeddings=True, show_progress_bar=False)
            )

        reference, seconds = timed(encode, max(1, args.runs - 2))
        print(f"| torch (reference) | {seconds:.1f} s | {pieces / seconds:,.0f} | 1 | 1 | 1 |")
    for variant in (r for r in args.rows if r != "torch"):
        embedder = MiniLMEmbedder(variant=variant, threads=args.threads)
        vectors, seconds = timed(lambda e=embedder: e.embed(texts), args.runs)
        if reference is not None:
            cos = np.sum(vectors * reference, axis=1)
            quality = f"{cos.min():.6f} | {np.percentile(cos, 1):.6f} | {cos.mean():.6f}"
        else:
            quality = "- | - | -"
        print(f"| onnx {variant} | {seconds:.1f} s | {pieces / seconds:,.0f} | {quality} |")
        if args.query:
            latencies = []
            for i in range(200):
                start = time.perf_counter()
                embedder.embed([QUERIES[i % len(QUERIES)]])
                latencies.append((time.perf_counter() - start) * 1000)
            latencies.sort()
            print(
                f"  one query, {variant}: p50 {latencies[100]:.2f} ms, p95 {latencies[189]:.2f} ms"
            )
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
