"""Ranking signals shared by context builds and search (``query_knowledge_graph``).

* **Where a file lives.** Repositories keep non-current copies beside their specs under names
  that say so: ``archive/``, ``drafts/``, ``templates/``, ``old/``, ``deprecated/``,
  ``*.draft.md``, ``*-tmpl.md``, ``*.bak.md``, ``*.superseded.md``, ``*.retired.md``,
  ``template.md``; dependencies' documents (``node_modules/``, ``vendor/``, ``third_party/``,
  ``dist/``) are someone else's. A node of such a file keeps ``NONCURRENT_FACTOR`` of its
  score: still found when nothing else answers, never ahead of the spec it copies. Only
  conventions shared across ecosystems are named here, never a product's folder: a tool
  installed into a repository (an agent method's workflows, prompts copied into each agent's
  folder) is told apart by its copies, below.
* **Records of work.** A story's task checklist, completion notes, file list, QA results and
  change log record how it was built; they rank like copies too (:data:`WORK_RECORDS`).
* **Content.** A match with no content (a document's title) points at an answer but holds
  none: it ranks below the sections that do.
* **Multi-part questions.** "How long is X valid, and what happens when Y?" asks for two
  sections; each part is searched on its own as well, so the second half is not drowned by
  the first (:func:`question_parts`).
* **Near-duplicates.** A restatement (a story repeating its epic, a copy of a page) has most of
  its word 3-grams in the original; a node whose 3-grams are mostly in a better-ranked one
  already shown is cited as its copy instead of shown, so copies do not fill the budget.
* **Which of two copies is the original** (:func:`copies_among`), decided from the data among
  a build's candidates: the one the other cites by file name; else the one holding more (a
  restatement has most of its 3-grams in the original, not the reverse); else, for verbatim
  copies, the one outside a numbered, dated or versioned folder (a run, a release snapshot),
  then the one nearer the root. The original takes the best rank of its copies, so a frozen
  copy that matched the words of a question brings the living document in its place.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Sequence

from kg.passages import PASSAGE_CHARS

NONCURRENT_FACTOR = 0.4
NONCURRENT_DIRS = frozenset(
    {"archive", "archived", "archives", "old", "deprecated", "obsolete", "draft", "drafts",
     "template", "templates", "attic", "backup", "backups",
     # other projects' documents copied in: dependencies and generated bundles
     "node_modules", "vendor", "vendored", "third_party", "third-party", "site-packages", "dist"}
)  # fmt: skip
_NONCURRENT_FILE = re.compile(
    r"([._-](draft|tmpl|template|old|bak|backup|copy|orig)|\.v?\d+(\.\d+)*-draft"
    r"|\.(superseded|retired|obsolete|outdated|archived|deprecated)|^(template|tmpl))\.md$",
    re.IGNORECASE,
)
DUPLICATE_SHARE = 0.6
MIN_DUPLICATE_CHARS = 200
_WORD = re.compile(r"\w+")


def file_of(node_id: str) -> str | None:
    """The project-relative file of a document or section node, else ``None``."""
    kind, _, rest = node_id.partition(":")
    if kind == "document":
        return rest
    if kind == "section":
        return rest.rsplit("#", 1)[0]
    return None


def noncurrent(node_id: str) -> bool:
    """True for a node of a file whose path marks it as a copy, draft, template or archive."""
    path = file_of(node_id)
    if not path:
        return False
    *dirs, name = path.lower().split("/")
    return any(d in NONCURRENT_DIRS for d in dirs) or bool(_NONCURRENT_FILE.search(name))


# Sections that record the work on a story rather than what holds: the BMad story template's
# Dev Agent Record (agent model, debug log, completion notes, file list), its task checklist,
# QA results, and any change log. They restate the specification in passing and, being long
# and about everything, matched every question of a real BMad project (bench/RESULTS.md,
# issue 13, held-out check): they rank like copies, still found when nothing else answers.
WORK_RECORDS = frozenset(
    {"tasks--subtasks", "tasks-subtasks", "dev-agent-record", "agent-model-used",
     "debug-log-references", "debug-log", "completion-notes-list", "completion-notes",
     "file-list", "qa-results", "change-log", "changelog", "revision-history"}
)  # fmt: skip
_REPEAT = re.compile(r"-\d+$")  # the slugger's suffix for a repeated heading


def work_record(node_id: str) -> bool:
    """True for a section whose heading names a record of work (:data:`WORK_RECORDS`)."""
    if not node_id.startswith("section:"):
        return False
    anchor = node_id.rsplit("#", 1)[-1]
    return anchor in WORK_RECORDS or _REPEAT.sub("", anchor) in WORK_RECORDS


def prior(node_id: str) -> float:
    return NONCURRENT_FACTOR if noncurrent(node_id) or work_record(node_id) else 1.0


# A match without content of its own (a document node: its title; a heading with nothing under
# it) cannot answer a question, only point at what does: it ranks at CONTENTLESS_FACTOR of its
# score, below a section about the same thing, still a candidate when nothing else matches.
CONTENTLESS_FACTOR = 0.5


def content_factor(content: str) -> float:
    return 1.0 if content.strip() else CONTENTLESS_FACTOR


# A whole file without headings (a chat transcript, review notes, a log) is one node holding
# many passages, and a match takes its best passage: the more passages, the more chances one
# matches a little, so such files won candidate generation on real repositories by length
# alone (issue 31, cause 0). Its score is divided by the square root of its length in
# passages (BM25's b does this for every text; here only for a text with no structure of its
# own, since long sections that define a thing must not lose to short restatements), never
# below UNSTRUCTURED_FLOOR. Sections and a file's own short preamble are left alone.
UNSTRUCTURED_FLOOR = 0.4


def unstructured_factor(node_id: str, content: str) -> float:
    if not node_id.startswith("document:") or len(content) <= PASSAGE_CHARS:
        return 1.0
    return max(UNSTRUCTURED_FLOOR, 1.0 / math.sqrt(len(content) / PASSAGE_CHARS))


def shingles(text: str, size: int = 3, limit: int = 4000) -> frozenset[int]:
    """Word ``size``-grams of the start of ``text``, as stable 32-bit hashes."""
    words = _WORD.findall(text[:limit].lower())
    return frozenset(
        zlib.crc32(" ".join(words[i : i + size]).encode()) for i in range(len(words) - size + 1)
    )


def contained(part: frozenset[int], whole: frozenset[int]) -> bool:
    """Most of ``part``'s 3-grams are in ``whole``: ``part`` restates (some of) ``whole``."""
    return bool(part) and len(part & whole) / len(part) >= DUPLICATE_SHARE


def copy_of(
    text: str, kept: Sequence[tuple[str, frozenset[int]]]
) -> tuple[str | None, frozenset[int]]:
    """The first kept node that ``text`` restates (or ``None``), and ``text``'s 3-grams. A
    text that holds more than the kept one (it contains it) is not its copy."""
    if len(text) < MIN_DUPLICATE_CHARS:
        return None, frozenset()
    own = shingles(text)
    for node_id, other in kept:
        if contained(own, other):
            return node_id, own
    return None, own


_QUESTION_WORDS = (
    "what|which|who|whom|whose|when|where|why|how|is|are|was|were|do|does|did|can|could|"
    "should|must|may|will|would|if"
)
# A part ends at a question mark or semicolon, or before ", and"/"and"/", or"/"also"
# followed by a question word ("..., and what happens ...").
_PART_BREAK = re.compile(
    rf"(?<=[?;])\s+|,?\s+(?:and|or|also|plus|then)\s+(?=(?:{_QUESTION_WORDS})\b)",
    re.IGNORECASE,
)
MAX_PARTS = 3
MIN_PART_WORDS = 3


def question_parts(text: str) -> list[str]:
    """The parts of a multi-part question (at most ``MAX_PARTS``), or ``[]`` for a single one.
    A part of fewer than ``MIN_PART_WORDS`` words joins the one before it."""
    parts: list[str] = []
    for piece in _PART_BREAK.split(text.strip()):
        piece = piece.strip(" ,")
        if not piece:
            continue
        if parts and len(piece.split()) < MIN_PART_WORDS:
            parts[-1] = f"{parts[-1]} {piece}"
        else:
            parts.append(piece)
    return parts[:MAX_PARTS] if len(parts) > 1 else []


# A part of a multi-part question ranks its best match at this share of the whole question's
# best. (Interleaving the lists by reciprocal rank instead was measured and dropped: it lost
# 0.02 of gold recall at every budget, bench/RESULTS.md.)
PART_WEIGHT = 0.8


def merge_parts(
    lists: Sequence[Sequence[tuple[str, float, float]]], limit: int
) -> list[tuple[str, float, float]]:
    """Merge the matches of a whole question (first) and of its parts: ``(node id, similarity,
    score)`` lists, each best first. Each list's scores are scaled to its best (the parts' to
    ``PART_WEIGHT``); a node keeps its best relevance. Best first, ties by node id."""
    merged: dict[str, tuple[float, float]] = {}  # node -> (similarity, relevance)
    for n, found in enumerate(lists):
        best = max((score for _, _, score in found), default=1.0) or 1.0
        weight = 1.0 if n == 0 else PART_WEIGHT
        for node, sim, score in found:
            old_sim, old_rel = merged.get(node, (0.0, 0.0))
            merged[node] = (max(sim, old_sim), max(weight * score / best, old_rel))
    ranked = sorted(merged.items(), key=lambda kv: (-round(kv[1][1], 9), kv[0]))
    return [(node, sim, rel) for node, (sim, rel) in ranked[:limit]]


# A folder that is one run, release or snapshot of many: ``specs/013-fix-merge/``,
# ``2026-02-11/``, ``v1.2/``, ``version-0.44.0/``. Its copy of a text is a frozen one.
_RUN_FOLDER = re.compile(
    r"^(?:\d+[-_.].*|.*\d{4}-\d{2}-\d{2}.*|v?\d+(?:\.\d+)+|(?:version|release)[-_]?v?\d.*)$",
    re.IGNORECASE,
)
# Candidates examined for copies: the best of a build's ranking (pairs: this squared / 2).
COPY_WINDOW = 48


def in_run_folder(path: str) -> bool:
    """True when a folder of ``path`` (not its file name: ADRs are numbered files) is numbered,
    dated or versioned."""
    return any(_RUN_FOLDER.match(part) for part in path.split("/")[:-1])


def _cites(text: str, path: str) -> bool:
    name = path.rsplit("/", 1)[-1].lower()
    return len(name) > 3 and name in text.lower()


def _copy_first(
    a: tuple[str, str, str], b: tuple[str, str, str], a_in_b: bool, b_in_a: bool
) -> bool:
    """Of two near-duplicates ``(node id, file, text)``, a before b in the ranking: True when
    ``a`` is the copy (``b`` the original), False when ``b`` is."""
    cites_b, cites_a = _cites(a[2], b[1]), _cites(b[2], a[1])
    if cites_b != cites_a:
        return cites_b  # a copy cites where it comes from: [Source: architecture.md#...]
    if a_in_b != b_in_a:
        return a_in_b  # the restatement's 3-grams are in the original, not the reverse
    run_a, run_b = in_run_folder(a[1]), in_run_folder(b[1])
    if run_a != run_b:
        return run_a
    depth_a, depth_b = a[1].count("/"), b[1].count("/")
    if depth_a != depth_b:
        return depth_a > depth_b
    return False  # verbatim, alike in place: the better-ranked one stands


def _grams(text: str, limit: int = 4000) -> frozenset[tuple[str, ...]]:
    """:func:`shingles` as word triples rather than their CRC-32s: the same containment
    (barring hash collisions) at a third of the cost, for the up to COPY_WINDOW texts a build
    compares (~20 ms of a build's Python as CRC-32s on the shared machine)."""
    words = _WORD.findall(text[:limit].lower())
    return frozenset(zip(words, words[1:], words[2:], strict=False))


def _share(part: frozenset[tuple[str, ...]], whole: frozenset[tuple[str, ...]]) -> bool:
    return bool(part) and len(part & whole) >= DUPLICATE_SHARE * len(part)


def copies_among(items: Sequence[tuple[str, str]]) -> dict[str, str]:
    """For ``(node id, text)`` candidates, best first: each copy's original (``{copy: original}``,
    the original never itself a copy). Only texts of at least MIN_DUPLICATE_CHARS in different
    files are compared; the first ``COPY_WINDOW`` are examined."""
    seen: list[tuple[tuple[str, str, str], frozenset[tuple[str, ...]]]] = []
    for node_id, text in items[:COPY_WINDOW]:
        path = file_of(node_id)
        if path is None or len(text) < MIN_DUPLICATE_CHARS:
            continue
        grams = _grams(text)
        if grams:
            seen.append(((node_id, path, text), grams))
    original: dict[str, str] = {}
    for i, (a, grams_a) in enumerate(seen):
        for b, grams_b in seen[i + 1 :]:
            if a[1] == b[1]:
                continue
            if grams_a.isdisjoint(grams_b):
                continue
            a_in_b, b_in_a = _share(grams_a, grams_b), _share(grams_b, grams_a)
            if not (a_in_b or b_in_a):
                continue
            copy, source = (a[0], b[0]) if _copy_first(a, b, a_in_b, b_in_a) else (b[0], a[0])
            original.setdefault(copy, source)  # a copy keeps its best-ranked original
    return {copy: _root(copy, original) for copy in original if _root(copy, original) != copy}


def _root(node_id: str, original: dict[str, str]) -> str:
    """The end of a chain of copies (a copy of a copy), stopping at a cycle."""
    seen = {node_id}
    while node_id in original and original[node_id] not in seen:
        node_id = original[node_id]
        seen.add(node_id)
    return node_id
