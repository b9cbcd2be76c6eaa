"""Import statements resolved to files of the repository, lexically (nothing is read).

Per language: Python modules by dotted path (relative imports from the importing package,
absolute ones matched against every folder a module path could start from, e.g. ``src/``);
JavaScript and TypeScript relative specifiers with the usual extensions and ``index`` files;
Go import paths by the repository folder they end with; Java ``a.b.C`` by ``a/b/C.java``;
Rust ``crate::a::b`` by ``a/b.rs`` or ``a/b/mod.rs``. Anything else is external: its names are
known not to be the repository's, which keeps calls through them from being guessed.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from kg.ingest.code.model import CodeFile

_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


@dataclass(slots=True)
class Bindings:
    """What the names a file imports stand for.

    ``modules``: local name -> the repository files it is (a module, a Go package folder);
    ``names``: local name -> (files it comes from, the name there); ``external``: local names
    bound to something outside the repository; ``files``: every repository file imported.
    """

    modules: dict[str, tuple[str, ...]] = field(default_factory=dict)
    names: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    external: set[str] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)  # file -> module text as written


class FileSet:
    """The repository's source files, indexed for lexical import resolution."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        self.by_suffix: dict[str, list[str]] = defaultdict(list)
        self.by_dir: dict[str, list[str]] = defaultdict(list)
        for path in sorted(self.paths):
            self.by_dir[posixpath.dirname(path)].append(path)
            parts = path.split("/")
            for i in range(len(parts)):
                self.by_suffix["/".join(parts[i:])].append(path)

    def suffix(self, tail: str, near: str) -> str | None:
        """The file whose path ends with ``tail``: the only one, else the one closest to
        ``near`` (sharing the longest folder prefix), else None."""
        found = self.by_suffix.get(tail, [])
        if len(found) <= 1:
            return found[0] if found else None
        scored = sorted(found, key=lambda p: (-_shared(p, near), len(p), p))
        if _shared(scored[0], near) == _shared(scored[1], near) and len(scored[0]) == len(
            scored[1]
        ):
            return None
        return scored[0]

    def folder_ending(self, tail: str) -> str | None:
        matches = [d for d in self.by_dir if d == tail or d.endswith("/" + tail)]
        return min(matches, key=len) if matches else None


def _shared(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        n += 1
    return n


def bindings(code: CodeFile, files: FileSet) -> Bindings:
    out = Bindings()
    resolver = _RESOLVERS.get(code.language)
    for ref in code.imports:
        if resolver is None:
            continue
        for local, imported in ref.names or ((ref.module, ""),):
            found = resolver(code.path, ref.module, imported, files)
            if found is None:
                out.external.add(local)
                continue
            target_files, name = found
            for f in target_files:
                out.files.setdefault(f, ref.module)
            if name:  # a default export is taken to be named as the importer names it
                out.names[local] = (target_files, local if name == "default" else name)
            else:
                out.modules[local] = target_files
    return out


Found = tuple[tuple[str, ...], str] | None


def _python(path: str, module: str, imported: str, files: FileSet) -> Found:
    dots = len(module) - len(module.lstrip("."))
    rest = module[dots:]
    if dots:
        base = posixpath.dirname(path)
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        stem = posixpath.join(base, *rest.split(".")) if rest else base

        def find(dotted_stem: str) -> str | None:
            for candidate in (dotted_stem + ".py", dotted_stem + "/__init__.py"):
                if candidate in files.paths:
                    return candidate
            return None
    else:
        stem = rest.replace(".", "/")

        def find(dotted_stem: str) -> str | None:
            return files.suffix(dotted_stem + ".py", path) or files.suffix(
                dotted_stem + "/__init__.py", path
            )

    if imported:
        sub = find(posixpath.join(stem, imported) if stem else imported)
        if sub is not None:
            return (sub,), ""  # ``from pkg import module``
        owner = find(stem) if stem else None
        return ((owner,), imported) if owner else None
    owner = find(stem)
    return ((owner,), "") if owner else None


def _js(path: str, module: str, imported: str, files: FileSet) -> Found:
    if not module.startswith("."):
        return None
    stem = posixpath.normpath(posixpath.join(posixpath.dirname(path), module))
    base = stem
    for ext in _JS_EXTENSIONS:
        if stem.endswith(ext):
            base = stem[: -len(ext)]
    candidates = (
        [stem] + [base + e for e in _JS_EXTENSIONS] + [f"{stem}/index{e}" for e in _JS_EXTENSIONS]
    )
    found = next((c for c in candidates if c in files.paths), None)
    if found is None:
        return None
    return (found,), imported


def _go(path: str, module: str, imported: str, files: FileSet) -> Found:
    folder = files.folder_ending(module)
    if folder is None:
        return None
    members = tuple(p for p in files.by_dir[folder] if p.endswith(".go"))
    return (members, "") if members else None


def _java(path: str, module: str, imported: str, files: FileSet) -> Found:
    found = files.suffix(module.replace(".", "/") + ".java", path)
    return ((found,), imported) if found else None


def _rust(path: str, module: str, imported: str, files: FileSet) -> Found:
    parts = [p for p in module.split("::") if p not in ("crate", "self", "super")]
    for cut in range(len(parts), 0, -1):
        stem = "/".join(parts[:cut])
        for tail in (stem + ".rs", stem + "/mod.rs"):
            found = files.suffix(tail, path)
            if found is not None:
                item = parts[cut] if cut < len(parts) else ""
                return (found,), item
    return None


_RESOLVERS = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "java": _java,
    "rust": _rust,
}
