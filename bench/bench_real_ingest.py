"""Where the seconds of a real repository's ingest go (issue 34, items 2 and 4).

One corpus of ``../shared/corpora`` (default ``speckit-deacon``, the issue's ~500-file
repository; or ``--generated N``, bench_ingest.py's generated Markdown files) is extracted as a git work tree and ingested whole with ``ingest_paths`` (what
``kg ingest .`` runs) into a fresh database of a throwaway embedded server, with the default
MiniLM embedder. Each phase's wall-clock time is summed where it runs (they overlap: parsing
runs in worker processes while the main thread appends, and the projections catch up in the
background while later chunks are appended):

* ``parse``: the chunks' parsing (a thread waiting on the worker processes);
* ``append``: the appends of events (validation, hash chain, Merkle leaves, commit);
* ``project``: the projections' catch-ups (their SQL, and the embedding inside kg_nodes');
* ``embed``: the embedder's own calls, with the word pieces it read;
* ``index``: the index builds after a bulk load (HNSW, GIN);
* ``backlog``: embedding the nodes projected without a vector (``--mode graph-first``).

``--mode inline`` embeds while projecting (main before issue 34 item 3); ``--mode
graph-first`` projects without vectors (nodes wait), then embeds the waiting nodes after the
graph is usable, as ``kg ingest`` does now. Run it ``nice -n 10`` without the benchmark lock:
it takes minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import drop_database, fresh_database, machine
from real_corpora import extract

from kg.config import Scope, Settings
from kg.embeddings import provider_from_config
from kg.embeddings.base import EmbeddingProvider

TIMES: dict[str, float] = {}
_DOCSTRING = re.compile(r'"""(.*?)"""|\'\'\'(.*?)\'\'\'', re.S)
COUNTS: dict[str, int] = {}


def _add(name: str, seconds: float) -> None:
    TIMES[name] = TIMES.get(name, 0.0) + seconds


def _wrap_async(owner: Any, attr: str, name: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - start)

    setattr(owner, attr, timed)


def _wrap_sync(owner: Any, attr: str, name: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _add(name, time.perf_counter() - start)

    setattr(owner, attr, timed)


class CountingEmbedder:
    """The embedder, timed, counting the texts and word pieces it is asked for."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.dimensions = inner.dimensions
        self.is_fallback = inner.is_fallback
        self.hashes: set[int] = set()

    def embed(self, texts: Any) -> list[list[float]]:
        start = time.perf_counter()
        vectors = self.inner.embed(texts)
        _add("embed", time.perf_counter() - start)
        tokenizer = getattr(getattr(self.inner, "_model", lambda: None)(), "tokenizer", None)
        COUNTS["texts"] = COUNTS.get("texts", 0) + len(texts)
        for text in texts:
            if hash(text) in self.hashes:
                COUNTS["texts embedded twice"] = COUNTS.get("texts embedded twice", 0) + 1
            self.hashes.add(hash(text))
            if tokenizer is not None:
                pieces = len(tokenizer.encode(text).ids)
                COUNTS["word pieces"] = COUNTS.get("word pieces", 0) + pieces
        return vectors


def instrument() -> None:
    from kg.events import multi
    from kg.ingest import pipeline, project
    from kg.projections.nodes import NodesProjection
    from kg.projections.runner import ProjectionRunner

    _wrap_sync(project, "parse_texts", "parse")
    pipeline.parse_texts = project.parse_texts  # type: ignore[attr-defined]
    _wrap_async(multi, "append_multi", "append")
    pipeline.append_multi = multi.append_multi  # type: ignore[attr-defined]
    _wrap_async(ProjectionRunner, "catch_up", "project")
    _wrap_async(ProjectionRunner, "catch_up_in_bulk", "project (bulk tail)")
    _wrap_async(NodesProjection, "finish_rebuild", "index")


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        _add(name, time.perf_counter() - start)


_GENERATED: list[Path] = []


def result_root() -> Path:
    """The generated corpus of this run (removed at the end)."""
    return _GENERATED[-1] if _GENERATED else Path("/nonexistent")


def generated(files: int) -> Path:
    """``bench_ingest.py``'s generated Markdown corpus of ``files`` files, as a git work tree."""
    import subprocess
    import tempfile

    from bench_ingest import generate

    root = Path(tempfile.mkdtemp(prefix="kg-bench-md-"))
    _GENERATED.append(root)
    generate(root, files)
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "generated"], cwd=root, check=True)
    return root


async def run(
    corpus: str, mode: str, url: str, files: int = 0, sample: float = 0.0
) -> dict[str, Any]:
    from kg.ingest.service import ingest_paths
    from kg.projections.embedding_backlog import count_waiting
    from kg.runtime import open_runtime

    root = generated(files) if files else extract(corpus)
    corpus = f"generated-{files}" if files else corpus
    scope = Scope("bench", corpus)
    embedder = CountingEmbedder(provider_from_config())
    settings = Settings(database_url=url, scope=scope, project_root=root)
    out: dict[str, Any] = {"corpus": corpus, "mode": mode}
    start = time.perf_counter()
    async with open_runtime(settings, url=url, embedder=embedder) as rt:  # type: ignore[arg-type]
        kwargs: dict[str, Any] = {}
        if mode == "graph-first":
            kwargs["vectors_after"] = True
        report = await ingest_paths(rt, None, **kwargs)
        out["graph ready s"] = round(time.perf_counter() - start, 1)
        async with rt.system_pool.acquire() as conn:
            out["waiting after graph"] = await count_waiting(conn, scope)
            out["nodes"] = await conn.fetchval(
                "SELECT count(*) FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2",
                scope.tenant_id,
                scope.project_id,
            )
            out["passages"] = await conn.fetchval(
                "SELECT count(*) FROM kg_passages WHERE tenant_id = $1 AND project_id = $2",
                scope.tenant_id,
                scope.project_id,
            )
        out["seconds by phase to graph ready (overlapping)"] = {
            k: round(v, 1) for k, v in TIMES.items()
        }
        print(json.dumps(out), flush=True)
        if mode == "graph-first" and sample:
            out.update(await _sample_backlog(rt, scope, embedder, sample))
        elif mode == "graph-first":
            from kg.ingest.service import embed_backlog

            ticker = asyncio.create_task(_tick(rt.runner.ctx, start))
            with phase("backlog"):
                await embed_backlog(rt)
            ticker.cancel()
        out["files"] = len(report.changed)
        out["events"] = report.events
        out["fully embedded s"] = round(time.perf_counter() - start, 1)
        async with rt.system_pool.acquire() as conn:
            out["waiting at end"] = await count_waiting(conn, scope)
    out["seconds by phase (overlapping)"] = {k: round(v, 1) for k, v in TIMES.items()}
    out["counts"] = COUNTS
    return out


async def _sample_backlog(
    rt: Any, scope: Scope, embedder: CountingEmbedder, seconds: float
) -> dict[str, Any]:
    """Embed the backlog for ``seconds`` only, and estimate the whole from its rate: every
    waiting text's word pieces are counted first (not timed)."""
    from kg.ingest.service import embed_backlog
    from kg.projections.embedding_backlog import texts_of

    texts: dict[str, str] = {}
    kinds: dict[str, str] = {}  # content hash -> node type (code: its symbol kind)
    signatures: dict[str, str] = {}  # code symbols: signature and docstring only
    async with rt.system_pool.acquire() as conn:
        for row in await conn.fetch(
            "SELECT node_id, node_type, name, content, properties::text AS properties "
            "FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2",
            scope.tenant_id,
            scope.project_id,
        ):
            found = texts_of(row)
            for h in found:
                kinds.setdefault(h, row["node_type"])
            texts.update(found)
            properties = json.loads(row["properties"] or "{}") or {}
            if row["node_type"] in ("Function", "Method") and properties.get("signature"):
                doc = _DOCSTRING.search(row["content"] or "")
                signatures[row["node_id"]] = "\n\n".join(
                    [
                        row["node_id"],
                        properties["signature"],
                        *([doc.group(1) or doc.group(2)] if doc else []),
                    ]
                )
    tokenizer = embedder.inner._model().tokenizer  # type: ignore[attr-defined]
    by_kind: dict[str, list[int]] = {}
    total = 0
    for h, t in texts.items():
        n = min(256, len(tokenizer.encode(t).ids))
        total += n
        entry = by_kind.setdefault(kinds[h], [0, 0])
        entry[0] += 1
        entry[1] += n
    signature_pieces = sum(min(256, len(tokenizer.encode(t).ids)) for t in signatures.values())
    COUNTS.clear()
    TIMES.pop("embed", None)
    start = time.perf_counter()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(embed_backlog(rt), seconds)
    wall = time.perf_counter() - start
    pieces = COUNTS.get("word pieces", 0)
    rate = pieces / wall if wall else 0.0
    return {
        "texts to embed": len(texts),
        "word pieces to embed": total,
        "texts, word pieces by node type": dict(sorted(by_kind.items(), key=lambda kv: -kv[1][1])),
        "functions and methods as signature + docstring: texts, word pieces": [
            len(signatures),
            signature_pieces,
        ],
        "backlog sample s": round(wall, 1),
        "sample: texts, word pieces": [COUNTS.get("texts", 0), pieces],
        "sample: seconds inside the embedder": round(TIMES.get("embed", 0.0), 1),
        "backlog word pieces/s (wall, fill SQL included)": round(rate),
        "estimated s to embed the rest": round(total / rate) if rate else None,
    }


async def _tick(ctx: Any, start: float) -> None:
    """A progress line every 60 s while the backlog is embedded (a long run can be stopped
    and still say its rate)."""
    while True:
        await asyncio.sleep(60)
        embed = TIMES.get("embed", 0.0)
        pieces = COUNTS.get("word pieces", 0)
        rate = pieces / embed if embed else 0.0
        print(
            f"  {time.perf_counter() - start:.0f} s: {ctx.embedded} texts embedded, "
            f"{pieces:,} word pieces in {embed:.0f} s of the embedder ({rate:,.0f}/s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="speckit-deacon")
    parser.add_argument("--mode", choices=("inline", "graph-first"), default="graph-first")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--generated", type=int, default=0, help="bench_ingest.py's generated Markdown files"
    )
    parser.add_argument(
        "--sample",
        type=float,
        default=0.0,
        help="graph-first: embed the backlog for this many seconds only and extrapolate",
    )
    args = parser.parse_args()
    instrument()
    url = fresh_database()
    try:
        result = asyncio.run(run(args.corpus, args.mode, url, args.generated, args.sample))
    finally:
        drop_database(url)
        if args.generated:
            import shutil

            shutil.rmtree(result_root(), ignore_errors=True)
    result["machine"] = machine()
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)


if __name__ == "__main__":
    main()
