"""Where MiniLM's time goes, and how close the encoder (ONNX Runtime) is to the machine's limit.

For the synthetic texts of ``bench_embeddings.py`` (~90 words each): tokenisation alone, the
whole ``embed``, word pieces and padded word pieces, and the encoder's arithmetic per second
(2 FLOPs per weight per word piece for the six layers' dense products, plus the attention's
two products), to compare with what two cores can do.

Run: ``python bench/bench_embed_cost.py [--texts 600] [--runs 3]`` (under the benchmark lock).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_embeddings import synthetic_texts
from kg.embeddings.minilm import (
    TOKEN_BUDGET,
    MiniLMEmbedder,
    _batches,
    _load_model,
    packaged_model_path,
)

HIDDEN, INNER, LAYERS = 384, 1536, 6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=600)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    texts = synthetic_texts(args.texts)
    embedder = MiniLMEmbedder()
    embedder.embed(texts[:8])  # load
    model = _load_model(packaged_model_path(), embedder.variant, embedder.threads)
    pieces = [model.tokenizer.encode(t).ids for t in texts]
    lengths = [len(p) for p in pieces]
    padded = sum(len(b) * lengths[b[0]] for b in _batches(lengths, TOKEN_BUDGET))
    tokens = sum(lengths)
    dense = 2 * LAYERS * (4 * HIDDEN * HIDDEN + 2 * HIDDEN * INNER)
    attention = sum(
        2 * 2 * LAYERS * HIDDEN * lengths[b[0]] * len(b) * lengths[b[0]]
        for b in _batches(lengths, TOKEN_BUDGET)
    )
    flops = dense * padded + attention
    tok_s, emb_s = [], []
    for _ in range(args.runs):
        start = time.perf_counter()
        for t in texts:
            model.tokenizer.encode(t)
        tok_s.append(time.perf_counter() - start)
        start = time.perf_counter()
        embedder.embed(texts)
        emb_s.append(time.perf_counter() - start)
    tok, emb = statistics.median(tok_s), statistics.median(emb_s)
    print(
        f"{len(texts)} texts, {tokens:,} word pieces ({tokens / len(texts):.0f} a text), "
        f"{padded:,} padded ({padded / tokens - 1:.1%} padding)"
    )
    print(
        f"tokenisation: {tok:.2f} s ({tok / emb:.1%} of embed); embed: {emb:.2f} s = "
        f"{len(texts) / emb:.1f} texts/s, {tokens / emb:,.0f} word pieces/s"
    )
    print(
        f"arithmetic: {flops / 1e9:.1f} GFLOP, {flops / emb / 1e9:.1f} GFLOP/s "
        f"(runs: {', '.join(f'{x:.2f}' for x in emb_s)} s)"
    )


if __name__ == "__main__":
    main()
