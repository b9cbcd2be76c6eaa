"""Throughput of the embedding providers in texts per second (a benchmark, not a test).

Embeds 2,000 synthetic paragraph-sized texts (60-120 words) with the hashing fallback (also in
its worst case, where every word is new and must be hashed), MiniLM on CPU, and the
OpenAI-compatible client against the local stub server from tests/embeddings/openai_stub.py.
The stub answers with made-up vectors and no model, so that row measures the client's own
overhead (HTTP, JSON, sorting, normalising), not any real server; the stub runs in the same
process and its JSON encoding competes for the GIL, so the figure is a lower bound for the
client alone. Each figure is the median of 3 timed runs after one warm-up run over the same
texts.

Usage: python bench/bench_embeddings.py [--texts N] [--runs N]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import itertools
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from kg.embeddings import HashingEmbedder, OpenAICompatibleEmbedder, SentenceTransformerEmbedder
from kg.embeddings.hashing import _word_features

VOCABULARY = (
    "event stream projection node edge policy agent context graph decision audit trail "
    "hash chain version append replay snapshot schema migration database query index "
    "vector embedding similarity search cache tenant scope reviewer commit branch file "
    "function class module test failure error retry timeout config the a of to and in "
    "is that for it with as was on be by this are from at or an which"
)
STUB_FILE = Path(__file__).resolve().parent.parent / "tests" / "embeddings" / "openai_stub.py"


def load_stub() -> ModuleType:
    """Import the test stub by file path (the tests directory is not an installed package)."""
    spec = importlib.util.spec_from_file_location("openai_stub", STUB_FILE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["openai_stub"] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def synthetic_texts(count: int, seed: int = 7) -> list[str]:
    """Paragraphs of 60-120 words drawn from a fixed vocabulary of project-ish words."""
    rng = random.Random(seed)
    vocabulary = VOCABULARY.split()
    texts = []
    for _ in range(count):
        words = [rng.choice(vocabulary) for _ in range(rng.randint(60, 120))]
        texts.append(" ".join(words).capitalize() + ".")
    return texts


def unique_word_texts(texts: list[str]) -> list[str]:
    """The same texts with a counter glued to every word, so that no word occurs twice."""
    counter = itertools.count()
    return [" ".join(f"{word}{next(counter)}" for word in text.split()) for text in texts]


def throughput(
    embed: Callable[[Sequence[str]], object],
    texts: list[str],
    runs: int,
    before_each: Callable[[], object] = lambda: None,
) -> float:
    """Median texts/s over ``runs`` timed calls, after one untimed warm-up call."""
    embed(texts)
    seconds = []
    for _ in range(runs):
        before_each()
        start = time.perf_counter()
        embed(texts)
        seconds.append(time.perf_counter() - start)
    return len(texts) / statistics.median(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    texts = synthetic_texts(args.texts)
    words = statistics.mean(len(t.split()) for t in texts)

    rows: list[tuple[str, str, float]] = []
    hashing = HashingEmbedder()
    rows.append((hashing.model_id, "in process", throughput(hashing.embed, texts, args.runs)))
    worst = throughput(
        hashing.embed, unique_word_texts(texts), args.runs, _word_features.cache_clear
    )
    rows.append((hashing.model_id, "worst case: every word new, feature cache cleared", worst))
    minilm = SentenceTransformerEmbedder()
    rows.append((minilm.model_id, "in process, CPU", throughput(minilm.embed, texts, args.runs)))
    stub_module = load_stub()
    with (
        stub_module.StubServer(dimensions=384) as stub,
        OpenAICompatibleEmbedder(stub.base_url, "stub-model") as client,
    ):
        rows.append(
            (
                client.model_id,
                "client overhead only: in-process stub server, no model (see note)",
                throughput(client.embed, texts, args.runs),
            )
        )

    print(
        f"Machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"os.cpu_count()={os.cpu_count()}, Python {platform.python_version()}"
    )
    print(f"Date: {datetime.date.today().isoformat()}")
    print(
        f"Input: {len(texts)} synthetic texts, {words:.0f} words on average; "
        f"median of {args.runs} runs after 1 warm-up"
    )
    print()
    print("| provider | where | texts/s |")
    print("| --- | --- | ---: |")
    for model_id, where, rate in rows:
        print(f"| {model_id} | {where} | {rate:,.0f} |")
    print()
    print(
        "Note: the openai row is the client's overhead against a local stub that answers "
        "instantly;\nthe stub shares the process (and the GIL), so the client alone is faster. "
        "A real server adds its model time."
    )


if __name__ == "__main__":
    main()
