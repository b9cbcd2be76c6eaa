"""The few git facts ingestion needs, read through the ``git`` command (no library).

Every call passes ``-z`` where git lists paths, so names with spaces, quotes or newlines come
through unchanged, and ``--no-optional-locks`` where git would otherwise refresh the index, so
a sync running next to the user's own git commands never fights them for ``index.lock``.
Paths are project-relative POSIX paths. The project root may be a folder inside the work tree
(``KG_PROJECT_ROOT``): commands run there with ``--relative`` (or ``:./path`` for index blobs),
and ``git status``, which always names paths from the top, has the folder's prefix removed.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kg.errors import KgError

GIT_TIMEOUT = 120
_PATHSPEC_CHUNK = 500


class GitError(KgError):
    """A git command failed; the message carries git's own explanation."""


def git(root: Path, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
    """Run ``git -C root --no-optional-locks ARGS`` and return its standard output."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "--no-optional-locks", *args],
            input=input,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed (or not on PATH)") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} did not finish within {GIT_TIMEOUT} s") from None
    if check and done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip() or f"exit {done.returncode}"
        raise GitError(f"git {' '.join(args[:2])} failed: {message}")
    return done.stdout


def _split(output: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in output.split(b"\0") if p]


def is_repository(root: Path) -> bool:
    try:
        out = git(root, "rev-parse", "--is-inside-work-tree", check=False)
    except GitError:
        return False
    return out.strip() == b"true"


def head_commit(root: Path) -> str | None:
    """The full sha of HEAD, or None outside a repository or before the first commit."""
    try:
        out = git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    except GitError:
        return None
    sha = out.decode().strip()
    return sha or None


def commit_exists(root: Path, sha: str) -> bool:
    try:
        git(root, "cat-file", "-e", f"{sha}^{{commit}}")
    except GitError:
        return False
    return True


@dataclass(frozen=True, slots=True)
class Change:
    """One path in ``git diff --name-status``: status ``A``, ``M``, ``D``, ``T`` (type)..."""

    status: str
    path: str


def changed_between(root: Path, old: str, new: str) -> list[Change]:
    """``git diff --name-status --no-renames old new``: renames come as a delete and an add,
    which is what ingestion wants (the old path's nodes retire, the new path's appear)."""
    out = git(root, "diff", "--name-status", "--no-renames", "--relative", "-z", old, new, "--")
    fields = _split(out)
    return [Change(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]


def staged_changes(root: Path) -> list[Change]:
    """What the commit being made changes: the index against HEAD (all added before the first
    commit)."""
    base = head_commit(root)
    if base is None:
        return [Change("A", path) for path in indexed_files(root)]
    out = git(
        root, "diff", "--cached", "--name-status", "--no-renames", "--relative", "-z", base, "--"
    )
    fields = _split(out)
    return [Change(fields[i][:1], fields[i + 1]) for i in range(0, len(fields) - 1, 2)]


def indexed_files(root: Path) -> list[str]:
    """Every path in the index (what the next commit will hold)."""
    return _split(git(root, "ls-files", "-z", "--cached"))


def differing_from_head(root: Path, paths: Sequence[str]) -> set[str]:
    """Those of ``paths`` whose working-tree state differs from HEAD (modified, staged,
    untracked, ignored, deleted but not committed). A path not returned is exactly as in HEAD,
    present or absent, so ``path@HEAD`` is true provenance for it."""
    prefix = git(root, "rev-parse", "--show-prefix").decode("utf-8", "surrogateescape").strip()
    dirty: set[str] = set()
    for start in range(0, len(paths), _PATHSPEC_CHUNK):
        chunk = paths[start : start + _PATHSPEC_CHUNK]
        out = git(
            root,
            "--literal-pathspecs",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--ignored=traditional",
            "--",
            *chunk,
        )
        fields = _split(out)
        i = 0
        while i < len(fields):
            entry = fields[i]
            dirty.add(entry[3:].removeprefix(prefix))
            # A rename or copy entry is followed by its source path.
            i += 2 if entry[:1] in ("R", "C") else 1
    wanted = set(paths)
    return {p for p in dirty if p in wanted} | {
        p for p in wanted if any(d.endswith("/") and p.startswith(d) for d in dirty)
    }


def read_index_blobs(root: Path, paths: Iterable[str]) -> dict[str, bytes]:
    """The staged content of ``paths`` (``git cat-file --batch`` on ``:path``); paths not in
    the index are left out. Honours ``GIT_INDEX_FILE``, so a pre-commit hook of
    ``git commit -a`` sees the temporary index of that commit."""
    wanted = [p for p in paths if "\n" not in p]
    if not wanted:
        return {}
    request = b"".join(b":./" + p.encode("utf-8", "surrogateescape") + b"\n" for p in wanted)
    out = git(root, "cat-file", "--batch", input=request)
    blobs: dict[str, bytes] = {}
    offset = 0
    for path in wanted:
        end = out.index(b"\n", offset)
        header = out[offset:end].split(b" ")
        offset = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            blobs[path] = out[offset : offset + size]
            offset += size + 1
        elif len(header) == 3:  # a tree or submodule under that name: skip its body
            offset += int(header[2]) + 1
    return blobs


def grep_index(root: Path, needles: Iterable[str], pathspecs: Sequence[str]) -> list[str]:
    """Indexed files matching ``pathspecs`` whose staged text contains any needle (fixed
    strings, case-insensitive)."""
    args: list[str] = []
    for needle in sorted(set(needles)):
        if needle and "\n" not in needle:
            args += ["-e", needle]
    if not args:
        return []
    out = git(
        root, "grep", "--cached", "-z", "-l", "-F", "-i", *args, "--", *pathspecs, check=False
    )
    return _split(out)


def worktree_changes(root: Path) -> list[str]:
    """Project-relative paths under ``root`` whose working-tree state differs from HEAD:
    modified, staged, added, untracked (not ignored) or deleted; both sides of a rename."""
    prefix = git(root, "rev-parse", "--show-prefix").decode("utf-8", "surrogateescape").strip()
    out = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
    fields = _split(out)
    found: list[str] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        found.append(entry[3:])
        if entry[:1] in ("R", "C") and i + 1 < len(fields):
            found.append(fields[i + 1])  # the source path of a rename or copy
            i += 1
        i += 1
    return sorted({p.removeprefix(prefix) for p in found if p.startswith(prefix)})
