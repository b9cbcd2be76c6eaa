"""A long node's content as passages, and the ones that best answer the task.

A section of several thousand characters would eat a prompt-sized budget on its own, and its
first N characters rarely hold the sentence the agent needs. The content is split into passages
of a few sentences (paragraphs, list items and table rows kept whole where they fit), each is
scored against the task's terms, and the best ones are kept within a character allowance, in
document order, joined by `` … ``. Pure functions: no database, no model, deterministic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

PASSAGE_CHARS = 360  # a passage: a paragraph, or a few sentences of a longer one
GAP = " … "

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9]|[A-Za-z]|\d+[A-Za-z]*\d*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=\S)")
_BLANK = re.compile(r"\n\s*\n")
# Function words and question scaffolding: they match everywhere and decide nothing.
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each else
    few for from further had has have having he her here hers him his how i if in into is it
    its itself just me more most my no nor not now of off on once only or other our ours out
    over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours shall may must might need needs use
    used using get gets does done make makes want should we i'm it's let lets tell know""".split()  # noqa: SIM905
)


def stem(word: str) -> str:
    """A crude, language-agnostic-enough stem: lower case, common English suffixes off, first
    seven letters (``authenticating``/``authentication`` -> ``authent``)."""
    w = word.lower()
    for suffix in ("ies", "es", "s"):
        if len(w) > 4 and w.endswith(suffix) and not w.endswith("ss"):
            w = w[: -len(suffix)] + ("y" if suffix == "ies" else "")
            break
    for suffix in ("ing", "ed", "ly"):
        if len(w) > 5 and w.endswith(suffix):
            w = w[: -len(suffix)]
            break
    return w[:7]


@lru_cache(maxsize=1 << 16)
def _term(word: str) -> str | None:
    """``word``'s stem, or None for a stop word or a single character. Cached: a build scores
    the passages of every candidate node, the same few thousand words over and over (stemming
    was a third of a semantic build's time)."""
    if len(word) <= 1 or word.lower() in STOPWORDS:
        return None
    return stem(word)


def terms(text: str) -> list[str]:
    """The meaningful terms of a text, stemmed, in order, repeats kept."""
    return [t for w in _WORD.findall(text) if (t := _term(w)) is not None]


def split_passages(content: str, size: int = PASSAGE_CHARS) -> list[str]:
    """Paragraphs, with long ones cut into runs of whole sentences (or lines) of about
    ``size`` characters; a single longer sentence is its own passage."""
    passages: list[str] = []
    for block in _BLANK.split(content):
        block = block.strip()
        if not block:
            continue
        if len(block) <= size:
            passages.append(block)
            continue
        current = ""
        for sep, piece in _pieces(block, size):
            if current and len(current) + 1 + len(piece) > size:
                passages.append(current)
                current = piece
            else:
                current = f"{current}{sep}{piece}" if current else piece
        if current:
            passages.append(current)
    return passages


def _pieces(block: str, size: int) -> list[tuple[str, str]]:
    """Lines (list items, table rows) of a block, long lines cut into sentences; each with the
    separator that joins it to the one before."""
    pieces: list[tuple[str, str]] = []
    for line in block.splitlines():
        line = line.strip()
        if not line:
            continue
        if len(line) <= size:
            pieces.append(("\n", line))
            continue
        pieces.extend((" ", s) for s in _SENTENCE_END.split(line) if s.strip())
    return pieces


@dataclass(frozen=True)
class Excerpt:
    text: str
    partial: bool  # True when the content was longer than what ``text`` holds


def excerpt(content: str, query: Sequence[str], allowance: int) -> Excerpt:
    """The passages of ``content`` that best match the stemmed ``query`` terms, within
    ``allowance`` characters, in document order. Without query terms (an anchor build), or when
    nothing matches, the opening passages. An allowance below a passage's size splits finer
    (lines, sentences), so a snippet is the sentence that matches, not a passage's start."""
    content = content.strip()
    if len(content) <= allowance:
        return Excerpt(content, False)
    passages = split_passages(content, min(PASSAGE_CHARS, allowance))
    scores = _scores(passages, query)
    order = sorted(range(len(passages)), key=lambda i: (-scores[i], i))
    if not scores or max(scores) <= 0:
        order = list(range(len(passages)))
    kept: list[int] = []
    used = 0
    for i in order:
        cost = len(passages[i]) + (len(GAP) if kept else 0)
        if used + cost > allowance:
            if not kept:  # the best passage alone is too long: its start, cut at a word
                return Excerpt(_cut_words(passages[i], allowance), True)
            continue
        if kept and scores[i] <= 0:
            break
        kept.append(i)
        used += cost
    kept.sort()
    text = "… " if kept[0] > 0 else ""
    for n, i in enumerate(kept):
        if n:
            text += "\n" if kept[n - 1] == i - 1 else GAP
        text += passages[i]
    if kept[-1] < len(passages) - 1:
        text += " …"
    return Excerpt(text, True)


def _cut_words(text: str, limit: int) -> str:
    if limit <= 1:
        return ""
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut + "…"


def _scores(passages: Sequence[str], query: Sequence[str]) -> list[float]:
    """BM25-like within one node: each query term counts by how rare it is among this node's
    passages (so a term in every passage decides little), saturating with repeats."""
    wanted = set(query)
    if not wanted:
        return [0.0] * len(passages)
    bags = [terms(p) for p in passages]
    df = {t: sum(1 for bag in bags if t in bag) for t in wanted}
    n = len(passages)
    scores = []
    for bag in bags:
        score = 0.0
        for t in wanted:
            tf = bag.count(t)
            if tf:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * (tf * 2.2) / (tf + 1.2)
        scores.append(score)
    return scores
