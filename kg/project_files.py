"""The one place that decides which of a project's files kg may read, and reads them.

Everything kg reads from a project's working tree (Markdown and code for ingest, the secret
scan of ``kg lint`` and ``lint_graph``, policy files, the schema map, ignore files, package
manifests) is a file an author, a dependency or an attacker with commit access can make into
something else: a symlink to ``/dev/zero`` (a read that never ends), a FIFO named ``*.md`` (a
read that never starts), a symlink to a file outside the project (its content reported back,
secrets included), a device. A file is read only when

- its path, with symlinks resolved, is inside the project root (a symlink within the project
  is followed; one that leaves it is refused);
- it is a regular file, checked on the opened descriptor (``O_NONBLOCK``, so opening a FIFO
  cannot block, and ``O_NOFOLLOW``, so the file cannot be swapped for a symlink between the
  check and the open);
- it is at most ``max_bytes`` long (and no more than that is ever read, even if it grows).

Standard library only: every layer may use it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_BYTES = 2_000_000
_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


@dataclass(frozen=True, slots=True)
class Refused:
    """Why a file was not read. ``too_large`` marks a file that is fine but over the size
    cap (ingest skips it with a warning; a malicious one is refused outright)."""

    message: str
    too_large: bool = False


def inside(root: Path, path: Path) -> Path | Refused:
    """``path`` (relative to ``root`` or absolute) resolved, when it lies inside ``root``."""
    base = Path(os.path.abspath(root))
    full = Path(os.path.normpath(path if path.is_absolute() else base / path))
    try:
        real = full.resolve(strict=True)
        real_root = base.resolve()
    except (OSError, RuntimeError) as error:  # missing file, symlink loop
        return Refused(f"cannot read file: {reason(error)}")
    if not real.is_relative_to(real_root):
        return Refused(f"refused: resolves to {real}, outside the project root {real_root}")
    return real


def read_project_bytes(
    root: Path, path: Path, max_bytes: int = DEFAULT_MAX_BYTES
) -> bytes | Refused:
    """The content of the project file ``path``, or why it may not be read (see the module
    docstring for the rules)."""
    real = inside(root, path)
    if isinstance(real, Refused):
        return real
    try:
        fd = os.open(real, _FLAGS)
    except OSError as error:
        return Refused(f"cannot read file: {reason(error)}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return Refused("refused: not a regular file")  # a device, FIFO, socket, folder
        if info.st_size > max_bytes:
            return Refused(
                f"refused: file is {info.st_size} bytes, the limit is {max_bytes}", too_large=True
            )
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        left = max_bytes + 1  # the file may have grown since fstat()
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        return Refused(f"cannot read file: {reason(error)}")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        return Refused(f"refused: file is larger than the limit of {max_bytes} bytes", True)
    return data


def read_project_text(
    root: Path, path: Path, max_bytes: int = DEFAULT_MAX_BYTES, errors: str = "strict"
) -> str | None:
    """The project file ``path`` as UTF-8 text, or None when it may not be read or (with
    ``errors="strict"``) is not UTF-8: for readers to whom an unreadable file is an absent
    one (ignore files, manifests, the secret scan)."""
    data = read_project_bytes(root, path, max_bytes)
    if isinstance(data, Refused):
        return None
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError:
        return None


def reason(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
