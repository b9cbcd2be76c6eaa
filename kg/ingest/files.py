"""Reading input files defensively: bad input becomes a ParseProblem, never an exception.

Two notions of "inside the project" are used on purpose. Node ids come from the *lexical*
path (``..`` collapsed, symlinks kept), so a symlinked file keeps the name the author sees.
Reading is allowed only when the *resolved* path (symlinks followed) is inside the resolved
root, so a symlink cannot make the parser read a file outside the project.
"""

from __future__ import annotations

import os
from pathlib import Path

from kg.parsed.model import ParseProblem, Severity
from kg.project_files import DEFAULT_MAX_BYTES, Refused, read_project_bytes

__all__ = [
    "DEFAULT_MAX_BYTES",
    "absolute_path",
    "decode_markdown_bytes",
    "project_relpath",
    "read_markdown_file",
]
_BOM = b"\xef\xbb\xbf"


def absolute_path(root: Path, path: Path) -> Path:
    """``path`` made absolute and lexically normalised; a relative path is taken from ``root``.

    Relative paths are relative to the project root, never to the working directory, so the
    same call gives the same ids wherever the process runs.
    """
    base = Path(os.path.abspath(root))
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def project_relpath(root: Path, path: Path) -> str | None:
    """The project-relative POSIX path of ``path``, or None when it is outside ``root``."""
    base = Path(os.path.abspath(root))
    candidate = absolute_path(root, path)
    try:
        rel = candidate.relative_to(base)
    except ValueError:
        # The root itself may be reached through a symlink (e.g. /tmp on macOS): compare the
        # resolved forms before giving up.
        try:
            rel = candidate.resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            return None
    posix = rel.as_posix()
    return None if posix in ("", ".") else posix


def read_markdown_file(
    root: Path, path: Path, max_bytes: int = DEFAULT_MAX_BYTES, unsuitable: Severity = "error"
) -> tuple[str | None, ParseProblem | None]:
    """Read a Markdown file as UTF-8 text, or explain why not.

    Returns ``(text, None)`` on success, ``(None, problem)`` otherwise. Refuses paths outside
    the root (after resolving symlinks and ``..``), non-regular files, files over
    ``max_bytes``, binary files (NUL bytes) and invalid UTF-8 (naming the byte offset and line).
    A leading UTF-8 byte order mark is dropped.

    ``unsuitable`` is the severity of a file that is readable but not text kg takes (too
    large, binary, not UTF-8): lint fails on it, an ingest skips it with a warning.
    """
    rel = project_relpath(root, path)
    shown = rel if rel is not None else str(path)

    def problem(message: str, line: int = 1) -> tuple[None, ParseProblem]:
        return None, ParseProblem(shown, line, message)

    if rel is None:
        return problem(f"refused: {path} is outside the project root {root}")
    data = read_project_bytes(root, path, max_bytes)
    if isinstance(data, Refused):
        if data.too_large:
            return None, ParseProblem(shown, 1, data.message, unsuitable)
        return problem(data.message)
    return decode_markdown_bytes(data, shown, max_bytes, unsuitable)


def decode_markdown_bytes(
    data: bytes, shown: str, max_bytes: int = DEFAULT_MAX_BYTES, unsuitable: Severity = "error"
) -> tuple[str | None, ParseProblem | None]:
    """The checks of :func:`read_markdown_file` on bytes already read (e.g. a blob from the git
    index): size, NUL bytes (binary), UTF-8; ``shown`` names the file in the problem, whose
    severity is ``unsuitable``."""

    def problem(message: str, line: int = 1) -> tuple[None, ParseProblem]:
        return None, ParseProblem(shown, line, message, unsuitable)

    if len(data) > max_bytes:
        return problem(f"refused: file is larger than the limit of {max_bytes} bytes")
    nul = data.find(b"\x00")
    if nul >= 0:
        return problem(
            f"refused: binary file (NUL byte at offset {nul})", data.count(b"\n", 0, nul) + 1
        )
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8"), None
    except UnicodeDecodeError as error:
        offset = error.start + skip
        line = data.count(b"\n", 0, offset) + 1
        return problem(f"invalid UTF-8 at byte offset {offset}: {error.reason}", line)
