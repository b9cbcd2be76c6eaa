"""Which files an ingest covers: paths as given (files, folders, removed files) made relative
to the project root, with anything outside the root refused before it is read."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kg.ingest.files import absolute_path, project_relpath
from kg.ingest.links import MARKDOWN_SUFFIXES, is_markdown
from kg.ingest.walker import is_skipped_dir, walk_files
from kg.languages import SOURCE_SUFFIXES, is_source
from kg.parsed.model import ParseProblem
from kg.validation import MAX_PATH_CHARS, clip, unstorable_reason

_INGESTED = MARKDOWN_SUFFIXES + SOURCE_SUFFIXES
_NOT_INGESTIBLE = (
    "refused: neither Markdown (.md, .markdown) nor source code of a supported language"
)


def is_ingestible(relpath: str) -> bool:
    """Markdown (specs) or source code of a supported language."""
    return is_markdown(relpath) or is_source(relpath)


@dataclass(slots=True)
class Targets:
    """``files`` exist and are read; ``missing`` are gone (their nodes retire if ingested);
    ``folders`` were scanned, so an ingested file under one that no longer exists is gone too
    (``""`` is the whole project)."""

    files: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)

    def covers_removed(self, relpath: str) -> bool:
        """Whether ``relpath`` (an ingested document) lies under a scanned folder."""
        return any(f == "" or relpath.startswith(f + "/") for f in self.folders)


def is_project_markdown(relpath: str) -> bool:
    """A Markdown file a project scan would find (not in tool state or a skipped folder)."""
    return is_markdown(relpath) and _in_scanned_folder(relpath)


def is_project_file(relpath: str) -> bool:
    """A Markdown or source file a project scan would find."""
    return is_ingestible(relpath) and _in_scanned_folder(relpath)


def _in_scanned_folder(relpath: str) -> bool:
    folders = posixpath.dirname(relpath).split("/") if "/" in relpath else []
    return not any(is_skipped_dir(p) for p in folders)


def resolve_targets(root: Path, paths: Iterable[Path | str] | None) -> Targets:
    """Resolve ``paths`` (absolute, or relative to ``root``; None means the whole project)."""
    targets = Targets()
    seen: set[str] = set()

    def add(relpath: str) -> None:
        if relpath not in seen:
            seen.add(relpath)
            targets.files.append(relpath)

    real_root = Path(os.path.abspath(root)).resolve()
    for given in [root] if paths is None else paths:
        unusable = _unusable_path(str(given))
        if unusable is not None:
            targets.problems.append(ParseProblem(clip(str(given)), 1, unusable))
            continue
        try:
            _resolve_one(root, real_root, Path(given), targets, add)
        except OSError as error:  # e.g. a name longer than the file system allows
            reason = error.strerror or type(error).__name__
            targets.problems.append(ParseProblem(clip(str(given)), 1, f"cannot use path: {reason}"))
    targets.files = _each_real_file_once(root, real_root, targets.files)
    return targets


def _each_real_file_once(root: Path, real_root: Path, files: list[str]) -> list[str]:
    """``files`` without the symlinks to another of them (``AGENTS.md -> CLAUDE.md``): the
    file is read once, under its own name, and its rules are not served twice."""
    listed = set(files)
    kept = []
    for rel in files:
        full = root / rel
        if full.is_symlink():
            try:
                real = full.resolve(strict=True).relative_to(real_root).as_posix()
            except (OSError, RuntimeError, ValueError):
                real = None  # broken, a loop, or outside the root: the reader refuses it
            if real is not None and real != rel and real in listed:
                continue
        kept.append(rel)
    return kept


def _resolve_one(
    root: Path, real_root: Path, given: Path, targets: Targets, add: Callable[[str], None]
) -> None:
    """Sort one path into ``targets`` (a file, a folder's files, a removed file, a problem)."""
    full = absolute_path(root, given)
    rel = "" if full == absolute_path(root, Path(".")) else project_relpath(root, full)
    if rel is None:
        targets.problems.append(
            ParseProblem(str(given), 1, f"refused: {given} is outside the project root {root}")
        )
    elif full.is_dir() and not full.resolve().is_relative_to(real_root):
        # A symlinked folder leading out of the project: not walked, so not even the
        # names of the files there are listed.
        targets.problems.append(
            ParseProblem(
                rel,
                1,
                f"refused: folder {rel} resolves to {full.resolve()}, outside the project "
                f"root {real_root}; nothing under it was read or listed",
            )
        )
    elif full.is_dir():
        targets.folders.append(rel)
        for found in walk_files(root, rel, _INGESTED):
            add(found)
    elif full.exists() or full.is_symlink():
        if is_ingestible(rel):
            add(rel)
        else:
            targets.problems.append(ParseProblem(rel, 1, _NOT_INGESTIBLE))
    elif is_ingestible(rel):
        targets.missing.append(rel)
    else:
        targets.problems.append(ParseProblem(rel, 1, "no such file or folder"))


def _unusable_path(given: str) -> str | None:
    """Why a path argument is refused before it reaches the file system, or None."""
    if len(given) > MAX_PATH_CHARS:
        return f"refused: path is {len(given):,} characters long; the limit is {MAX_PATH_CHARS:,}"
    reason = unstorable_reason(given)
    return None if reason is None else f"refused: path {reason}"
