"""What an ingest embeds, in word pieces, under each way of cutting a node into texts (issue 34,
item 2). No model runs: the texts are built as the kg_nodes projection builds them and counted
with MiniLM's tokenizer (truncated at 256 word pieces, as the model reads them).

Policies, each a change of main's (``main``: a node's own text is its heading path and first
~1,000 characters, a long node's passages are packed to 700 characters):

* ``own = first passage``: a long node's own text is its first passage's (one vector, shared);
* ``+ passages of N``: passages packed to N characters instead of 700.

Per policy: distinct texts, word pieces the model reads, and word pieces cut off by the 256
limit (text no vector sees). Also the texts that are copies (the same text under another
heading path: the same content in another file) and what sharing their vectors would save.

Run: python bench/bench_embed_texts.py [--corpus speckit-deacon bmad-docvet] [--sizes 700 1000]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from real_corpora import extract

from kg.breadcrumbs import breadcrumb
from kg.embeddings import cache
from kg.embeddings.minilm import packaged_model_path
from kg.ingest.markdown import parse_markdown
from kg.ingest.schema_map import load_schema_map


def main_own_text(name: str, content: str, place: str) -> str:
    """main's node text before issue 34 (heading path, then the first 4,000 characters)."""
    title = place or name
    return f"{title}\n\n{content[:4000]}" if content else title


def nodes_of(corpus: str) -> list[tuple[str, str, str, str]]:
    """(file, name, content, place) of every Markdown node, parsed as ingestion parses it."""
    root = extract(corpus)
    schema = load_schema_map(root)
    out = []
    for path in sorted(root.rglob("*.md")):
        if ".git" in path.parts:
            continue
        try:
            doc = parse_markdown(root, path, schema=schema)
        except Exception:  # an unreadable file: the ingest skips it too
            continue
        for node in doc.nodes:
            place = breadcrumb(node.node_id, node.name, node.properties or {})
            out.append((str(path.relative_to(root)), node.name, node.content or "", place))
    return out


def texts(
    nodes: list[tuple[str, str, str, str]], size: int, shared_own: bool
) -> tuple[dict[str, str], int]:
    """Every distinct text (hash -> text) under a policy, and how many are long nodes' own."""
    old = cache.PASSAGE_EMBED_CHARS
    cache.PASSAGE_EMBED_CHARS = size
    try:
        found: dict[str, str] = {}
        own_long = 0
        for _, name, content, place in nodes:
            passages = cache.passage_texts(name, content, place)
            own = passages[0] if shared_own and passages else main_own_text(name, content, place)
            if passages and not shared_own:
                own_long += 1
            found.setdefault(own, own)
            for p in passages:
                found.setdefault(p, p)
        return found, own_long
    finally:
        cache.PASSAGE_EMBED_CHARS = old


def count(tokenizer: object, items: list[str]) -> tuple[int, int]:
    """Word pieces read (at most 256 each) and word pieces cut off."""
    encode = tokenizer.encode_batch  # type: ignore[attr-defined]
    read = cut = 0
    for start in range(0, len(items), 512):
        for enc in encode(items[start : start + 512]):
            n = len(enc.ids)
            read += min(n, 256)
            cut += max(0, n - 256)
    return read, cut


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", nargs="+", default=["speckit-deacon", "bmad-docvet"])
    parser.add_argument("--sizes", type=int, nargs="+", default=[700, 850, 1000])
    args = parser.parse_args()
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(packaged_model_path() / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    for corpus in args.corpus:
        nodes = nodes_of(corpus)
        print(f"\n{corpus}: {len(nodes)} Markdown nodes")
        print("| policy | distinct texts | word pieces read | cut off at 256 |")
        print("| --- | ---: | ---: | ---: |")
        policies = [("main (own text + passages of 700)", 700, False)]
        policies += [(f"own = first passage, passages of {s}", s, True) for s in args.sizes]
        for label, size, shared in policies:
            found, _ = texts(nodes, size, shared)
            read, cut = count(tokenizer, list(found.values()))
            print(f"| {label} | {len(found):,} | {read:,} | {cut:,} |")
        # Copies: the same content (after the heading path) in more than one text.
        found, _ = texts(nodes, 700, True)
        bodies = Counter(t.split("\n\n", 1)[1] for t in found.values() if "\n\n" in t)
        copies = [t for t in found.values() if "\n\n" in t and bodies[t.split("\n\n", 1)[1]] > 1]
        extra = sum(bodies[b] - 1 for b in bodies if bodies[b] > 1)
        read, _ = count(tokenizer, copies)
        print(
            f"copies (same content, another heading path): {len(copies):,} texts, "
            f"{read:,} word pieces; sharing one vector per content would embed {extra:,} "
            "fewer texts"
        )


if __name__ == "__main__":
    main()
