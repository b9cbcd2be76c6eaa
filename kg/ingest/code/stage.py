"""Source files inside one ingest run: parse the changed ones, link them against the whole
repository, hand the pipeline one ParsedDocument per file.

Linking needs every symbol of the repository, so code is parsed in full before any of it is
diffed (the Markdown chunks stream; code cannot). Unchanged files are not parsed: their
symbols come from the graph. When a change adds or removes a name, the unchanged files whose
references use that name are re-linked too (re-parsed: their text is read again), so a call
that was unknown or ambiguous before is linked now, and one whose target went away is
dropped with it.
"""

from __future__ import annotations

import asyncio
import hashlib
import posixpath
from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from kg.config import Scope
from kg.ingest.code import state as code_state
from kg.ingest.code.document import build_document
from kg.ingest.code.extract import parse_source
from kg.ingest.code.history import History
from kg.ingest.code.imports import FileSet, bindings
from kg.ingest.code.model import CodeFile
from kg.ingest.code.resolve import CallStats, Entry, Linker, SymbolIndex, entries_of
from kg.ingest.files import read_markdown_file
from kg.ingest.requirements import RequirementMatcher
from kg.ingest.state import scoped
from kg.languages import content_skip_reason, language_of
from kg.parsed.model import ParsedDocument, ParseProblem

CODE_PARSER_VERSION = "code-1"
POOL_MIN_FILES = 200


@dataclass(slots=True)
class CodeRun:
    """What the code part of one ingest produced besides documents."""

    stats: CallStats = field(default_factory=CallStats)
    skipped: dict[str, list[str]] = field(default_factory=dict)
    problems: list[ParseProblem] = field(default_factory=list)
    relinked: list[str] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # names that appeared or disappeared
    removed_paths: list[str] = field(default_factory=list)
    # Every source file of the repository after this run, the files linked in it and their
    # symbols (with the graph's symbols of the other files: the code names for the specs).
    paths: set[str] = field(default_factory=set)
    linked_paths: set[str] = field(default_factory=set)
    symbol_ids: list[str] = field(default_factory=list)


def parse_one(relpath: str, text: str, matcher: RequirementMatcher) -> CodeFile | ParseProblem:
    """Parse one file; any failure of the parser becomes a problem, never an exception."""
    language = language_of(relpath)
    if language is None:
        return ParseProblem(relpath, 1, "not a source file of a supported language")
    try:
        return parse_source(relpath, text, language, matcher)
    except Exception as error:  # a grammar or binding failure must not end the run
        return ParseProblem(relpath, 1, f"cannot parse: {type(error).__name__}: {error}")


def _parse_chunk(
    items: list[tuple[str, str]], prefixes: tuple[str, ...]
) -> list[CodeFile | ParseProblem]:
    matcher = RequirementMatcher(prefixes)
    return [parse_one(rel, text, matcher) for rel, text in items]


async def parse_many(
    items: Sequence[tuple[str, str]], prefixes: tuple[str, ...], pool: Executor | None
) -> list[CodeFile | ParseProblem]:
    loop = asyncio.get_running_loop()
    if pool is None or len(items) < POOL_MIN_FILES:
        return await asyncio.to_thread(_parse_chunk, list(items), prefixes)
    size = 32
    chunks = [list(items[i : i + size]) for i in range(0, len(items), size)]
    futures = [loop.run_in_executor(pool, _parse_chunk, c, prefixes) for c in chunks]
    return [doc for part in await asyncio.gather(*futures) for doc in part]


def code_fingerprint_salt(extra: str = "") -> str:
    return hashlib.sha256(f"{CODE_PARSER_VERSION}\n{extra}".encode()).hexdigest()[:16]


class CodeStage:
    """Turns the changed (and removed) source files of one run into ParsedDocuments."""

    def __init__(
        self,
        root: Path,
        scope: Scope,
        prefixes: tuple[str, ...],
        specs: set[str],
        history: History | None = None,
    ) -> None:
        self.root = root
        self.scope = scope
        self.prefixes = prefixes
        self.specs = specs
        self.history = history or History()
        self.run = CodeRun()

    async def link(
        self,
        read: Reader,
        texts: dict[str, str],
        changed: list[str],
        removed: list[str],
        pool: Executor | None,
    ) -> list[ParsedDocument]:
        """``read`` gives the graph's code files and symbols; ``texts`` holds the changed
        files' text (consumed)."""
        items: list[tuple[str, str]] = []
        for rel in changed:
            text = texts.get(rel, "")
            reason = content_skip_reason(text)
            if reason is not None:
                self.run.skipped.setdefault(reason, []).append(rel)
                continue
            items.append((rel, text))
        parsed = await parse_many(items, self.prefixes, pool)
        files: list[CodeFile] = []
        for result in parsed:
            if isinstance(result, ParseProblem):
                self.run.problems.append(result)
            else:
                files.append(result)
        mine = {f.path for f in files} | set(removed)
        wanted = {n for f in files for n in _refs(f)}
        known_paths, graph_entries = await read(sorted(wanted), sorted(mine))
        old_names = {e.name for e in graph_entries if e.file_path in mine}
        new_names = {s.name for f in files for s in f.symbols}
        old_ids = {e.node_id for e in graph_entries if e.file_path in mine}
        new_ids = {e.node_id for f in files for e in entries_of(f)}
        moved = {i.split("#", 1)[1].rsplit(".", 1)[-1] for i in old_ids ^ new_ids}
        added_files = {posixpath.basename(p).split(".")[0] for p in mine if p not in known_paths}
        touched = (old_names ^ new_names) | moved | added_files
        touched |= {posixpath.basename(p).split(".")[0] for p in removed}
        self.run.touched = touched | {p for p in mine if p not in known_paths} | set(removed)
        self.run.removed_paths = list(removed)
        dependents = [
            p for p in await read.referring(sorted(touched)) if p not in mine and p not in removed
        ]
        if dependents:
            extra = await asyncio.to_thread(self._read_dependents, dependents)
            more: list[CodeFile] = []
            for result in await parse_many(extra, self.prefixes, pool):
                if isinstance(result, CodeFile):
                    more.append(result)
                    self.run.relinked.append(result.path)
            files += more
            mine |= set(self.run.relinked)
            missing = {n for f in more for n in _refs(f)} - wanted
            if missing:
                _, extra_entries = await read(sorted(missing), [])
                seen = {e.node_id for e in graph_entries}
                graph_entries += [e for e in extra_entries if e.node_id not in seen]
        return self.link_parsed(
            files,
            [e for e in graph_entries if e.file_path not in mine],
            (set(known_paths) - set(removed)) | {f.path for f in files},
        )

    def link_parsed(
        self, files: list[CodeFile], others: Iterable[Entry], paths: Iterable[str]
    ) -> list[ParsedDocument]:
        """Link parsed ``files`` against each other and the ``others`` symbols (of files not
        parsed now); ``paths`` are every source file of the repository (for imports)."""
        index = SymbolIndex(others)
        for f in files:
            for entry in entries_of(f):
                index.add(entry)
        fileset = FileSet(paths)
        self.run.paths = set(fileset.paths)
        self.run.symbol_ids = [e.node_id for f in files for e in entries_of(f)]
        self.run.linked_paths = {f.path for f in files}
        docs: list[ParsedDocument] = []
        for f in files:
            linked = Linker(f, index, bindings(f, fileset), self.specs).run()
            self.run.stats.add(linked.stats)
            linked.edges += [  # only to files that are ingested (not deleted, not vendored)
                e for e in self.history.edges(f.path) if e.to_node[9:] in fileset.paths
            ]
            docs.append(build_document(f, linked, _refs(f), self.history.properties(f.path)))
        return docs

    def _read_dependents(self, paths: list[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for rel in paths:
            text, _ = read_markdown_file(self.root, Path(rel))
            if text is not None:
                out.append((rel, text))
        return out


class Reader:
    """Reads the graph's code for one run (a callable, plus the dependents query)."""

    def __init__(self, pool: asyncpg.Pool, scope: Scope) -> None:
        self.pool = pool
        self.scope = scope

    async def __call__(
        self, names: list[str] | None = None, paths: list[str] | None = None
    ) -> tuple[list[str], list[Entry]]:
        """Every source file ingested, and the symbols a link can need: every class (for
        receiver types and bases), those named ``names``, and those of the files ``paths``
        (None: every symbol)."""
        async with scoped(self.pool, self.scope) as conn:
            return (
                await code_state.code_files(conn, self.scope),
                await code_state.symbols(conn, self.scope, names, paths),
            )

    async def referring(self, names: list[str]) -> list[str]:
        async with scoped(self.pool, self.scope) as conn:
            return await code_state.files_referring(conn, self.scope, names)


def _refs(code: CodeFile) -> list[str]:
    names = {c.parts[-1] for c in code.calls if c.parts}
    names |= {c.parts[0] for c in code.calls if c.parts}
    names |= {b.rsplit(".", 1)[-1] for s in code.symbols for b in s.bases}
    for ref in code.imports:
        names |= {local for local, _ in ref.names} | {n for _, n in ref.names if n}
        names.add(ref.module.replace("::", ".").replace("/", ".").rsplit(".", 1)[-1])
    return sorted(n for n in names if n)
