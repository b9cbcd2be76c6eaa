"""Technologies and frameworks from a project's manifests.

``pyproject.toml``, ``requirements.txt``, ``package.json``, ``go.mod``, ``Cargo.toml``,
``Gemfile``, ``pom.xml`` and ``build.gradle`` are read from the project root and from the
folders of the files in play (up to the root). A manifest that cannot be read or parsed is
skipped with a note in the evidence: detection never fails on one.

Every ``query_directives`` call detects, so what a folder holds and what a manifest depends on
are kept per process and looked at again when the folder's or the file's modification time
changes (one ``stat`` per folder and per manifest instead of one per possible manifest name).
Like git's index, an entry younger than :data:`SETTLED` seconds is not kept: a change within
the same tick of the file system's clock would not move its time.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from kg.project_files import read_project_text

MANIFESTS = ("pyproject.toml", "requirements.txt", "package.json", "go.mod", "Cargo.toml",
             "Gemfile", "pom.xml", "build.gradle", "build.gradle.kts")  # fmt: skip
_LANGUAGE = {"pyproject.toml": "python", "requirements.txt": "python", "package.json":
             "javascript", "go.mod": "go", "Cargo.toml": "rust", "Gemfile": "ruby",
             "pom.xml": "java", "build.gradle": "java", "build.gradle.kts": "kotlin"}  # fmt: skip
#: Dependency names (lowercase; for Go the module path) -> the framework they mean.
FRAMEWORKS: dict[str, str] = {
    "fastapi": "fastapi", "django": "django", "flask": "flask", "sqlalchemy": "sqlalchemy",
    "sqlmodel": "sqlalchemy", "pydantic": "pydantic", "pytest": "pytest", "alembic": "alembic",
    "celery": "celery", "asyncpg": "asyncpg", "typer": "typer", "click": "click",
    "react": "react", "next": "nextjs", "vue": "vue", "svelte": "svelte",
    "@angular/core": "angular", "express": "express", "@nestjs/core": "nestjs", "jest": "jest",
    "vitest": "vitest", "prisma": "prisma", "@prisma/client": "prisma",
    "tailwindcss": "tailwind", "typescript": "typescript", "github.com/gin-gonic/gin": "gin",
    "github.com/labstack/echo/v4": "echo", "gorm.io/gorm": "gorm", "tokio": "tokio",
    "axum": "axum", "actix-web": "actix", "diesel": "diesel", "serde": "serde", "rails": "rails",
    "spring-boot-starter-web": "spring", "org.springframework.boot": "spring",
}  # fmt: skip
EXTENSIONS = {".py": "python", ".pyi": "python", ".ts": "typescript", ".tsx": "typescript",
              ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".go": "go",
              ".rs": "rust", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".sql": "sql",
              ".cs": "csharp", ".php": "php", ".swift": "swift", ".vue": "javascript",
              ".svelte": "javascript", ".c": "c", ".cpp": "cpp", ".h": "c"}  # fmt: skip
T = TypeVar("T")
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_MAX_MANIFEST = 1_000_000


@dataclass
class Technologies:
    languages: dict[str, list[str]] = field(default_factory=dict)  # value -> evidence
    frameworks: dict[str, list[str]] = field(default_factory=dict)

    def add_language(self, value: str, why: str) -> None:
        self.languages.setdefault(value, []).append(why)

    def add_framework(self, value: str, why: str) -> None:
        self.frameworks.setdefault(value, []).append(why)


def read_technologies(root: Path, paths: list[str], *, manifests: bool = True) -> Technologies:
    found = Technologies()
    folders = {""}
    for path in paths:
        folder = posixpath.dirname(path)
        while folder:
            folders.add(folder)
            folder = posixpath.dirname(folder)
        ext = posixpath.splitext(path)[1].lower()
        if ext in EXTENSIONS:
            found.add_language(EXTENSIONS[ext], f"file {path}")
    for folder in sorted(folders) if manifests else ():
        for name in _present(os.path.join(root, folder)):
            rel = posixpath.join(folder, name) if folder else name
            full = root / rel
            found.add_language(_LANGUAGE[name], f"manifest {rel}")
            for dep in _dependencies(root, full, name):
                framework = FRAMEWORKS.get(dep.casefold())
                if framework:
                    found.add_framework(framework, f"{rel} depends on {dep}")
                    if framework == "typescript":
                        found.add_language("typescript", f"{rel} depends on typescript")
    return found


SETTLED = 2.0
_KEEP = 4096
# (what, path) -> (the path's modification time and size when read, what was read)
_kept: dict[tuple[str, str], tuple[tuple[int, int], Any]] = {}


def _while_unchanged(what: str, path: str, read: Callable[[], T], missing: T) -> T:
    """``read()``, kept for ``path`` until its modification time or size changes (``missing``
    when there is no such path)."""
    try:
        st = os.stat(path)
    except OSError:
        return missing
    stamp, key = (st.st_mtime_ns, st.st_size), (what, path)
    kept = _kept.get(key)
    if kept is not None and kept[0] == stamp:
        return cast(T, kept[1])
    value = read()
    if time.time() - st.st_mtime_ns / 1e9 > SETTLED:
        if len(_kept) >= _KEEP:
            _kept.clear()
        _kept[key] = (stamp, value)
    return value


def _present(folder: str) -> tuple[str, ...]:
    """The manifest names that are files in ``folder``, in :data:`MANIFESTS` order (a
    folder's time moves when an entry is added or removed)."""
    return _while_unchanged(
        "folder", folder,
        lambda: tuple(n for n in MANIFESTS if os.path.isfile(os.path.join(folder, n))), (),
    )  # fmt: skip


def _dependencies(root: Path, path: Path, name: str) -> list[str]:
    return _while_unchanged("manifest", str(path), lambda: _read_dependencies(root, path, name), [])


def _read_dependencies(root: Path, path: Path, name: str) -> list[str]:
    # never a FIFO, a device or a file outside the project (kg.project_files)
    text = read_project_text(root, path, _MAX_MANIFEST, errors="replace")
    if text is None:
        return []
    try:
        if name == "pyproject.toml":
            return _pyproject(tomllib.loads(text))
        if name == "requirements.txt":
            return [m.group(1) for line in text.splitlines() if (m := _REQ_NAME.match(line))]
        if name == "package.json":
            data = json.loads(text)
            return [
                str(k)
                for key in ("dependencies", "devDependencies", "peerDependencies")
                if isinstance(data.get(key), dict)
                for k in data[key]
            ]
        if name == "go.mod":
            return re.findall(r"^\s*(?:require\s+)?([\w.\-]+\.[\w.\-/]+)\s+v", text, re.M)
        if name == "Cargo.toml":
            data = tomllib.loads(text)
            return [str(k) for key in ("dependencies", "dev-dependencies")
                    for k in (data.get(key) or {})]  # fmt: skip
        if name == "Gemfile":
            return re.findall(r"""^\s*gem\s+['"]([\w-]+)""", text, re.M)
        return re.findall(r"(spring-boot-starter-web|org\.springframework\.boot)", text)
    except (OSError, ValueError, tomllib.TOMLDecodeError):
        return []


def _pyproject(data: dict[str, Any]) -> list[str]:
    project = data.get("project") or {}
    specs: list[str] = list(project.get("dependencies") or [])
    for extra in (project.get("optional-dependencies") or {}).values():
        specs += list(extra or [])
    names = [m.group(1) for s in specs if isinstance(s, str) and (m := _REQ_NAME.match(s))]
    poetry = ((data.get("tool") or {}).get("poetry") or {}).get("dependencies") or {}
    return names + [str(k) for k in poetry]
