"""Where ingested content came from, as the ``source`` of its events' metadata.

``docs/prd.md@<commit sha>`` when the file is exactly as in that commit (so a reviewer can
``git show`` it); otherwise ``docs/prd.md@sha256:<first 16 hex of the text's hash>`` (a file
outside git, or edited since the last commit), and ``docs/prd.md@worktree`` for a removal
that is not committed yet.

A file ingested while it differs from the commit is *working-tree state* (``kg sync
--worktree``, ``kg watch``, or ``kg ingest`` of an edited file): its document's ``kg_source``
says so (:func:`worktree_fingerprint`), so once the same text is committed, the next sync
re-records the document with the commit as its source instead of skipping it as unchanged.
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

    def is_worktree(self, relpath: str) -> bool:
        """Whether ``relpath`` differs from a commit the project has (uncommitted state)."""
        return self.commit is not None and relpath in self.dirty

    def source(self, relpath: str, content_hash: str | None) -> str:
        if self.commit is not None and relpath not in self.dirty:
            return f"{relpath}@{self.commit}"
        if content_hash:
            return f"{relpath}@sha256:{content_hash[:16]}"
        return f"{relpath}@worktree"


WORKTREE_MARK = "+worktree"


def worktree_fingerprint(fingerprint: str) -> str:
    """The stored fingerprint of a file ingested as working-tree state: it never equals the
    plain one, so the file is re-derived (and re-sourced) once it is committed."""
    return fingerprint + WORKTREE_MARK
