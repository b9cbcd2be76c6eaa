"""Which files are source code, in which language, and which are skipped and why.

A file is source by its extension. Vendored, generated and minified files are skipped: their
symbols would crowd the project's own out of every context graph. Path rules decide before a
file is read; content rules (a "generated" header, minified lines) after.
"""

from __future__ import annotations

import posixpath
import re

LANGUAGES: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
SOURCE_SUFFIXES = tuple(LANGUAGES)

# Folders whose files are someone else's code or build output.
VENDORED_DIRS = frozenset(
    {
        "vendor",
        "vendors",
        "third_party",
        "third-party",
        "thirdparty",
        "external",
        "dist",
        "build",
        "target",
        "out",
        "bower_components",
        "jspm_packages",
        "node_modules",
        "site-packages",
        "__pycache__",
        "venv",
        "migrations_generated",
    }
)
_GENERATED_NAME = re.compile(
    r"(_pb2(_grpc)?\.pyi?|\.pb\.go|_generated\.\w+|\.generated\.\w+|\.gen\.\w+|\.d\.ts|"
    r"\.min\.js|-min\.js|\.bundle\.js)$",
    re.IGNORECASE,
)
_GENERATED_HEADER = re.compile(
    r"(code generated .* do not edit|@generated|auto-?generated|do not edit by hand|"
    r"this file was automatically generated)",
    re.IGNORECASE,
)
MINIFIED_LINE = 500  # characters: a line this long on average is minified or data
_HEADER_LINES = 20
_COMMENT = re.compile(r"^\s*(#|//|/\*|\*|--|\"{3}|'{3})")


def language_of(relpath: str) -> str | None:
    """The tree-sitter language of a project-relative path, or None when it is not source."""
    return LANGUAGES.get(posixpath.splitext(relpath)[1].lower())


def is_source(relpath: str) -> bool:
    return language_of(relpath) is not None


def path_skip_reason(relpath: str) -> str | None:
    """``vendored`` or ``generated`` when the path alone says so, else None."""
    folders = relpath.split("/")[:-1]
    if any(f.lower() in VENDORED_DIRS for f in folders):
        return "vendored"
    if _GENERATED_NAME.search(relpath):
        return "generated"
    return None


def content_skip_reason(text: str) -> str | None:
    """``generated`` (a header says so) or ``minified`` (very long lines), else None."""
    head = text[:4000].split("\n", _HEADER_LINES)[:_HEADER_LINES]
    if any(_COMMENT.match(line) and _GENERATED_HEADER.search(line) for line in head):
        return "generated"  # said in a comment: a pattern in code is not a header
    lines = text.count("\n") + 1
    if len(text) > 5 * MINIFIED_LINE and len(text) / lines > MINIFIED_LINE:
        return "minified"
    return None
