"""Which files of the project a scan sees: the one place that walks the project's folders.

A scan (``kg ingest .``, ``kg sync``, the wiki index, lint) finds files under a folder and then
drops those the user said to leave alone:

* tool state (:data:`TOOL_STATE_DIRS`: ``.git``, ``.kg``, caches, editor folders), any
  virtual environment (a folder holding ``pyvenv.cfg``) and :data:`SKIPPED_DIRS` are not
  entered, and symlinked folders are not followed, so the walk stays inside the project.
  Other hidden folders are read: ``.specify/memory/constitution.md``, ``.github/``,
  ``.claude/`` and ``.planning/`` hold specs and rules that git tracks like any other file;
* what git ignores (every ``.gitignore``, ``.git/info/exclude``, the user's global excludes),
  asked of ``git ls-files`` in a git work tree, so the rules are git's own; a file git
  tracks is never ignored, as in git. Outside git, the root ``.gitignore`` is read with
  ``pathspec``'s git-compatible matcher;
* what the project's ``.kgignore`` (same syntax as ``.gitignore``, at the project root) lists:
  files kept in git but not wanted in the graph (chat logs, generated docs).

A path named on the command line is not filtered: naming a file is asking for it. Other
ingesters (code, rules) call :func:`walk_files` with their own suffixes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from kg.ingest.links import MARKDOWN_SUFFIXES
from kg.project_files import read_project_text

KGIGNORE = ".kgignore"
GITIGNORE = ".gitignore"
# Folders that hold tooling or dependencies rather than the project's specs.
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})
# Hidden folders that hold a tool's state, never the project's knowledge.
TOOL_STATE_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".kg", ".venv", ".tox", ".nox", ".direnv", ".eggs",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".cache", ".idea", ".vscode",
        ".terraform", ".gradle", ".next", ".nuxt", ".yarn", ".npm", ".pnpm-store",
    }
)  # fmt: skip
_GIT_TIMEOUT = 60

if TYPE_CHECKING:
    import pathspec


def walk_files(
    root: Path,
    folder: str = "",
    suffixes: Sequence[str] = MARKDOWN_SUFFIXES,
) -> list[str]:
    """Project-relative POSIX paths of the files under ``root/folder`` whose names end with
    one of ``suffixes`` (case-insensitive), sorted, without ignored ones."""
    base = os.path.abspath(root)
    start = os.path.join(base, folder) if folder else base
    ends = tuple(s.lower() for s in suffixes)
    found: list[str] = []
    for current, dirs, files in os.walk(start):
        # Plain string joins, not Path objects: a one-file sync walks the whole project.
        rel = os.path.relpath(current, base).replace(os.sep, "/")
        prefix = "" if rel == "." else rel + "/"
        dirs[:] = [
            d
            for d in dirs
            if not is_skipped_dir(d) and not os.path.exists(os.path.join(current, d, "pyvenv.cfg"))
        ]
        found += [prefix + name for name in files if name.lower().endswith(ends)]
    return sorted(drop_ignored(root, found))


def is_skipped_dir(name: str) -> bool:
    """Whether a folder of this name is never scanned (tool state or dependencies)."""
    return name in SKIPPED_DIRS or name in TOOL_STATE_DIRS


def drop_ignored(root: Path, relpaths: Iterable[str]) -> list[str]:
    """``relpaths`` (project-relative) without those git or ``.kgignore`` ignore, in order."""
    paths = list(relpaths)
    if not paths:
        return paths
    ignored = _git_ignored(root, paths)
    if ignored is None:  # not a git work tree: the root .gitignore, read here
        git_mtime = _mtime(root, GITIGNORE)
        ignored = (
            set(_matcher(root, GITIGNORE, git_mtime).match_files(paths)) if git_mtime else set()
        )
    kg_mtime = _mtime(root, KGIGNORE)
    if kg_mtime:
        ignored |= set(_matcher(root, KGIGNORE, kg_mtime).match_files(paths))
    drop = ignored
    return [p for p in paths if p not in drop] if drop else paths


def _git_ignored(root: Path, paths: list[str]) -> set[str] | None:
    """The paths git ignores, or None when ``root`` is not in a git work tree (or git is
    missing).

    One ``git ls-files --others --ignored --exclude-standard --directory`` lists what git
    ignores under ``root`` (an ignored folder as ``folder/``, not descended into), so the
    cost does not grow with the number of paths, and paths in a submodule or a nested
    repository (which ``git check-ignore`` refuses) are no special case.
    """
    try:
        done = subprocess.run(
            [
                "git",
                "--no-optional-locks",
                "ls-files",
                "-z",
                "--others",
                "--ignored",
                "--exclude-standard",
                "--directory",
            ],
            cwd=root,
            capture_output=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:  # not a git work tree
        return None
    listed = [p.decode("utf-8", "surrogateescape") for p in done.stdout.split(b"\0") if p]
    files = {p for p in listed if not p.endswith("/")}
    folders = tuple(p for p in listed if p.endswith("/"))
    return {p for p in paths if p in files or (folders and p.startswith(folders))}


def _mtime(root: Path, name: str) -> float:
    try:
        return (root / name).stat().st_mtime
    except OSError:
        return 0.0


@lru_cache(maxsize=16)
def _matcher(root: Path, name: str, mtime: float) -> pathspec.GitIgnoreSpec:
    """The rules of ``root/name`` (cached while the file is unchanged: ``mtime`` is part of
    the key). A missing or unreadable file ignores nothing. pathspec is imported here: a
    one-file sync without a ``.kgignore`` never needs it."""
    import pathspec

    text = read_project_text(root, Path(name), errors="replace")  # never a FIFO or /dev/zero
    lines = text.splitlines() if text is not None else []
    return pathspec.GitIgnoreSpec.from_lines(lines)
