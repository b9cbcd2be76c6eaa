"""Ranking signals shared by context builds and search (``query_knowledge_graph``).

* **Where a file lives.** Repositories keep non-current copies beside their specs under names
  that say so: ``archive/``, ``drafts/``, ``templates/``, ``old/``, ``deprecated/``,
  ``*.draft.md``, ``*-tmpl.md``, ``*.bak.md``, ``*.superseded.md``, ``*.retired.md``,
  ``template.md``; dependencies' documents (``node_modules/``, ``vendor/``, ``third_party/``,
  ``dist/``) and an installed agent method (``_bmad/``, ``bmad-core/``) are someone else's.
  A node of such a file keeps ``NONCURRENT_FACTOR`` of its score: still found when nothing
  else answers, never ahead of the spec it copies.
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
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence

NONCURRENT_FACTOR = 0.4
NONCURRENT_DIRS = frozenset(
    {"archive", "archived", "archives", "old", "deprecated", "obsolete", "draft", "drafts",
     "template", "templates", "attic", "backup", "backups",
     # other projects' documents copied in: dependencies and generated bundles
     "node_modules", "vendor", "vendored", "third_party", "third-party", "site-packages", "dist",
     # an agent method installed into the repository (BMad's workflows, agents, checklists
     # and templates): instructions to agents, not the project's specifications
     "_bmad", "bmad", "bmad-core", "_bmad-core"}
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
