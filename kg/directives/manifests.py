"""Technologies and frameworks from a project's manifests.

``pyproject.toml``, ``requirements.txt``, ``package.json``, ``go.mod``, ``Cargo.toml``,
``Gemfile``, ``pom.xml`` and ``build.gradle`` are read from the project root and from the
folders of the files in play (up to the root). A manifest that cannot be read or parsed is
skipped with a note in the evidence: detection never fails on one.
"""

from __future__ import annotations

import json
import posixpath
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


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
        for name in MANIFESTS:
            rel = posixpath.join(folder, name) if folder else name
            full = root / rel
            if not full.is_file():
                continue
            found.add_language(_LANGUAGE[name], f"manifest {rel}")
            for dep in _dependencies(full, name):
                framework = FRAMEWORKS.get(dep.casefold())
                if framework:
                    found.add_framework(framework, f"{rel} depends on {dep}")
                    if framework == "typescript":
                        found.add_language("typescript", f"{rel} depends on typescript")
    return found


def _dependencies(path: Path, name: str) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:1_000_000]
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
