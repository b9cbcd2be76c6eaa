"""Git history of the source files: how recently and how often each changed, by how many
people, and which files change together.

One ``git log`` over the last N commits (default 500) gives, per file, its last change time,
its commit count and its author count in that window, and, per pair of files, how many
commits changed both. A pair's co-change weight is ``together / min(commits of either)``:
1.0 when the rarer-changing file never changed without the other. Pairs seen together fewer
than :data:`MIN_TOGETHER` times are noise and dropped, and so are commits touching more than
:data:`MAX_FILES_PER_COMMIT` source files (a reformat or a vendored drop says nothing about
coupling).

The facts are part of a file's fingerprint, so a file is re-derived exactly when its facts
change; a CO_CHANGED edge belongs to the pair's first path (in sort order).
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kg.ingest import gitio
from kg.languages import is_source
from kg.parsed.model import ParsedEdge, document_id

DEFAULT_COMMITS = 500
MIN_TOGETHER = 2
MAX_FILES_PER_COMMIT = 50
MAX_PARTNERS = 20  # strongest co-change edges kept per file
CO_CHANGED = "CO_CHANGED"
_RECORD = "\x1e"
_FIELD = "\x1f"


@dataclass(slots=True)
class History:
    """``facts``: path -> {last_change, commits, authors}; ``together``: path -> partner ->
    commits that changed both."""

    commits: int = 0
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)
    together: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    def weight(self, a: str, b: str) -> float:
        both = self.together.get(a, Counter()).get(b, 0)
        rarer = min(self.facts[a]["commits"], self.facts[b]["commits"])
        return round(both / rarer, 3) if rarer else 0.0

    def partners(self, path: str) -> list[tuple[str, int, float]]:
        """The files that changed with ``path`` often enough, strongest first."""
        pairs = [
            (other, n, self.weight(path, other))
            for other, n in self.together.get(path, Counter()).items()
            if n >= MIN_TOGETHER
        ]
        pairs.sort(key=lambda t: (-t[2], -t[1], t[0]))
        return pairs[:MAX_PARTNERS]

    def edges(self, path: str) -> list[ParsedEdge]:
        """The CO_CHANGED edges ``path`` owns (to partners after it in sort order)."""
        return [
            ParsedEdge(
                CO_CHANGED,
                document_id(path),
                document_id(other),
                {"count": n, "weight": weight},
            )
            for other, n, weight in self.partners(path)
            if other > path
        ]

    def properties(self, path: str) -> dict[str, Any] | None:
        facts = self.facts.get(path)
        return None if facts is None else {"git": facts}

    def salt(self, path: str) -> str:
        """Changes exactly when this file's facts or owned co-change edges change."""
        facts = self.facts.get(path)
        if facts is None:
            return ""
        edges = [
            (e.to_node, e.properties["count"], e.properties["weight"]) for e in self.edges(path)
        ]
        text = repr((sorted(facts.items()), edges))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_history(root: Path, max_commits: int = DEFAULT_COMMITS) -> History:
    """The history of the last ``max_commits`` commits (empty outside a git repository)."""
    history = History()
    if max_commits <= 0 or gitio.head_commit(root) is None:
        return history
    out = gitio.git(
        root,
        "log",
        f"-n{max_commits}",
        "--no-renames",
        "--name-only",
        "-z",
        f"--format={_RECORD}%H{_FIELD}%at{_FIELD}%ae",
    )
    last: dict[str, int] = {}
    counts: Counter[str] = Counter()
    authors: dict[str, set[str]] = defaultdict(set)
    for record in out.decode("utf-8", "surrogateescape").split(_RECORD)[1:]:
        header, _, names = record.partition("\n")
        _, stamp, email = [*header.strip("\0").split(_FIELD), "", "", ""][:3]
        files = sorted({n.strip("\n") for n in names.split("\0") if is_source(n.strip("\n"))})
        history.commits += 1
        when = int(stamp or 0)
        for path in files:
            counts[path] += 1
            authors[path].add(email.lower())
            last[path] = max(last.get(path, 0), when)
        if 1 < len(files) <= MAX_FILES_PER_COMMIT:
            for a, b in itertools.combinations(files, 2):
                history.together[a][b] += 1
                history.together[b][a] += 1
    for path, n in counts.items():
        history.facts[path] = {
            "last_change": datetime.fromtimestamp(last[path], UTC).isoformat(),
            "commits": n,
            "authors": len(authors[path]),
        }
    return history
