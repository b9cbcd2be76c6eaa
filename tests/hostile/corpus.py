"""The hostile file corpus: malformed Markdown files, generated (several are megabytes, or
symlinks, which a data folder would not keep), each with what kg must say about it.

``problem`` is a fragment of the message the file must be named with (``None``: the file is
odd but legal and must simply ingest); ``line`` the line the message must point at (``None``:
any line). Every entry is ingested beside :data:`GOOD_FILES` good files, which must all make it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

GOOD_FILES = 5


def deep_flow(levels: int) -> bytes:
    return f"---\nnested: {'[' * levels}{']' * levels}\n---\n# Deep\n".encode()


def deep_block(levels: int) -> bytes:
    lines = ["---", "title: deep", "a:"] + ["  " * i + "k:" for i in range(1, levels)]
    return ("\n".join([*lines, "---", "# Deep block", ""])).encode()


BILLION_LAUGHS = b"""---
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
---
# Laughs
"""

# An alias chain: each anchor nests the previous one a level deeper, so the composed value is
# 200 levels deep while the text never nests more than one.
ALIAS_CHAIN = (
    "---\nl0: &l0 x\n"
    + "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 200))
    + "---\n# Chain\n"
).encode()


@dataclass(frozen=True)
class Hostile:
    name: str  # the file's name under docs/
    problem: str | None
    line: int | None = None
    content: bytes | None = None
    # Makes the file itself (a symlink, ...) in the project's docs/ folder instead of content.
    make: Callable[[Path], None] | None = None


def _symlink(target: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        os.symlink(target, path)

    return make


CORPUS: list[Hostile] = [
    Hostile("nul-value.md", "contains a NUL character", 2, b'---\ntitle: "bad\\0x"\n---\n# B\n'),
    Hostile("nul-key.md", "contains a NUL character", 3, b'---\nt: 1\nn:\n  "k\\0": 1\n---\n# B\n'),
    Hostile("nul-byte.md", "binary file (NUL byte", 2, b"---\ntitle: a\x00b\n---\n# B\n"),
    Hostile("deep-300.md", "deeper than 64 levels", 2, deep_flow(300)),
    Hostile("deep-1000.md", "deeper than 64 levels", 2, deep_flow(1000)),
    # libyaml's composer recursed in C here: the whole process died (SIGSEGV).
    Hostile("deep-100000.md", "deeper than 64 levels", 2, deep_flow(100_000)),
    Hostile("deep-block.md", "deeper than 64 levels", None, deep_block(1000)),
    Hostile("alias-chain.md", "deeper than 64 levels", None, ALIAS_CHAIN),
    Hostile("self-alias.md", "deeper than 64 levels", 2, b"---\na: &a [*a]\n---\n# Loop\n"),
    Hostile("billion-laughs.md", "more than 10000 values", None, BILLION_LAUGHS),
    Hostile("bad-utf8.md", "invalid UTF-8", 3, b"# T\n\nok \xff\xfe bytes\n"),
    Hostile("binary.md", "binary file", None, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 50),
    Hostile("too-big.md", "the limit is 2000000", 1, b"# Big\n" + b"x" * 3_000_000),
    Hostile("list-front-matter.md", "must be a mapping", None, b"---\n- a\n- b\n---\n# L\n"),
    Hostile("scalar-front-matter.md", "must be a mapping", None, b"---\njust text\n---\n# S\n"),
    Hostile("broken-yaml.md", "malformed front matter", None, b"---\na: [1, 2\nb: }\n---\n# Y\n"),
    Hostile("surrogate-escape.md", "malformed front matter", 2, b'---\nt: "\\ud800"\n---\n# X\n'),
    Hostile(
        "escaping-link.md", "outside the project root", 3, b"# P\n\n[pw](../../../etc/pw.md)\n"
    ),
    Hostile("loop.md", "cannot read file", 1, make=_symlink("loop.md")),
    Hostile("passwd.md", "outside the project root", 1, make=_symlink("/etc/passwd")),
    # Odd but legal: must ingest, and not disturb the batch.
    Hostile("unterminated.md", "never closed", 1, b"---\ntitle: never closed\n# Heading\n\ntext\n"),
    Hostile("controls.md", None, None, b"# Head\x01ing \x1b[31mred\x7f\n\nbody\n"),
    Hostile("long-heading.md", None, None, b"# " + b"word " * 40_000 + b"\n\nbody\n"),
    Hostile("huge-line.md", None, None, b"# One line\n\n" + b"abc " * 400_000 + b"\n"),
    Hostile(
        "many-headings.md", None, None, "".join(f"## H{i}\n\nt\n" for i in range(3000)).encode()
    ),
]


def write_project(root: Path, hostile: Hostile) -> None:
    """``docs/`` under ``root`` with :data:`GOOD_FILES` good files and ``hostile``."""
    docs = root / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    for i in range(GOOD_FILES):
        (docs / f"good-{i}.md").write_text(f"---\ntitle: Good {i}\n---\n# Good {i}\n\nFine.\n")
    path = docs / hostile.name
    if hostile.make is not None:
        hostile.make(path)
    else:
        assert hostile.content is not None
        path.write_bytes(hostile.content)
