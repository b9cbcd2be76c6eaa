"""Where ingested content came from, as the ``source`` of its events' metadata.

``docs/prd.md@<commit sha>`` when the file is exactly as in that commit (so a reviewer can
``git show`` it); otherwise ``docs/prd.md@sha256:<first 16 hex of the text's hash>`` (a file
outside git, or edited since the last commit), and ``docs/prd.md@worktree`` for a removal
that is not committed yet.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kg.ingest import gitio


class Provenance:
    """The commit and the files that differ from it, read once per ingest."""

    def __init__(self, commit: str | None, dirty: set[str]) -> None:
        self.commit = commit
        self.dirty = dirty

    @classmethod
    def read(cls, root: Path, relpaths: Sequence[str]) -> Provenance:
        commit = gitio.head_commit(root) if relpaths else None
        if commit is None:
            return cls(None, set())
        try:
            dirty = gitio.differing_from_head(root, relpaths)
        except gitio.GitError:
            return cls(None, set())
        return cls(commit, dirty)

    def source(self, relpath: str, content_hash: str | None) -> str:
        if self.commit is not None and relpath not in self.dirty:
            return f"{relpath}@{self.commit}"
        if content_hash:
            return f"{relpath}@sha256:{content_hash[:16]}"
        return f"{relpath}@worktree"
