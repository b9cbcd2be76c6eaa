"""Parsing a whole project: find its Markdown files, index them for wiki links, parse each."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Executor
from pathlib import Path

from kg.ingest.files import DEFAULT_MAX_BYTES, project_relpath
from kg.ingest.links import WikiIndex
from kg.ingest.markdown import parse_markdown, parse_text
from kg.ingest.schema_map import SchemaMap, load_schema_map
from kg.ingest.walker import SKIPPED_DIRS, walk_files
from kg.parsed.model import ParsedDocument, ParseProblem

__all__ = [
    "SKIPPED_DIRS",
    "discover_markdown",
    "parse_project",
    "parse_texts",
    "parsing_pool",
]


def discover_markdown(root: Path) -> list[str]:
    """Project-relative POSIX paths of the Markdown files under ``root``, sorted, without
    tool state, skipped or ignored ones (:func:`kg.ingest.walker.walk_files`); hidden
    folders such as ``.github`` and ``.specify`` are read."""
    return walk_files(root)


def parse_project(
    root: Path,
    paths: Iterable[Path] | None = None,
    schema: SchemaMap | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    workers: int = 1,
) -> list[ParsedDocument]:
    """Parse ``paths`` (default: every Markdown file under ``root``) with one shared wiki index.

    The wiki index covers every Markdown file of the project, not only ``paths``, so a
    partial re-ingest resolves ``[[page]]`` the same way a full one does. Results are in the
    order of ``paths``. Parsing is CPU-bound pure Python: ``workers > 1`` spreads it over that
    many processes, which pays off from a few hundred files on.
    """
    schema = schema if schema is not None else load_schema_map(root)
    all_files = discover_markdown(root)
    index = WikiIndex(all_files)
    targets = list(paths) if paths is not None else [Path(p) for p in all_files]
    if workers <= 1 or len(targets) < 2 * workers:
        _init_worker(root, schema, index, max_bytes)
        return [_parse_one(path) for path in targets]
    from concurrent.futures import ProcessPoolExecutor  # multiprocessing: only for big batches

    chunk = max(1, min(64, len(targets) // (workers * 4)))
    with ProcessPoolExecutor(
        workers, initializer=_init_worker, initargs=(root, schema, index, max_bytes)
    ) as pool:
        return list(pool.map(_parse_one, targets, chunksize=chunk))


def parse_texts(
    items: Sequence[tuple[str, str]],
    schema: SchemaMap,
    index: WikiIndex,
    *,
    pool: Executor | None = None,
    chunk_size: int = 16,
) -> list[ParsedDocument]:
    """Parse ``(relpath, text)`` pairs already read (and checked) by the caller, in order.

    With ``pool`` (a process pool made by :func:`parsing_pool`) the work is spread over its
    processes, ``chunk_size`` files per task.
    """
    if pool is None:
        return [parse_text(relpath, text, schema, index) for relpath, text in items]
    size = max(1, chunk_size)
    chunks = [list(items[i : i + size]) for i in range(0, len(items), size)]
    return [doc for part in pool.map(_parse_text_chunk, chunks) for doc in part]


def parsing_pool(root: Path, schema: SchemaMap, index: WikiIndex, workers: int) -> Executor:
    """A process pool whose workers hold ``schema`` and ``index`` (sent once, not per file)."""
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        workers, initializer=_init_worker, initargs=(root, schema, index, DEFAULT_MAX_BYTES)
    )


def _parse_text_chunk(items: list[tuple[str, str]]) -> list[ParsedDocument]:
    assert _context is not None
    _, schema, index, _ = _context
    return [parse_text(relpath, text, schema, index) for relpath, text in items]


# Per-process parsing context, set once by the pool initializer instead of pickled per file.
_context: tuple[Path, SchemaMap, WikiIndex, int] | None = None


def _init_worker(root: Path, schema: SchemaMap, index: WikiIndex, max_bytes: int) -> None:
    global _context
    _context = (root, schema, index, max_bytes)


def _parse_one(path: Path) -> ParsedDocument:
    assert _context is not None
    root, schema, index, max_bytes = _context
    if project_relpath(root, path) is None:
        problem = ParseProblem(str(path), 1, f"refused: {path} is outside the project root")
        return ParsedDocument(str(path), "", (), (), (problem,))
    return parse_markdown(root, path, schema=schema, wiki_index=index, max_bytes=max_bytes)
