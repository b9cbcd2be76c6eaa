"""Lint what a commit is about to record: the staged Markdown, read from the git index.

Parsing the whole project on every commit would cost seconds on a large one, so only the
files that matter are parsed:

* the staged files themselves (added or modified), as staged;
* the files their links point at, for their headings (to check ``#anchors``);
* the files that may link to a staged file whose headings could have changed or that is being
  deleted: found with ``git grep`` on the file's name, which every Markdown link and wiki link
  to it spells.

Problems are reported in staged files, and in other files only for their links into staged or
deleted files (a commit is not blocked by an old problem elsewhere). No database is needed.
"""

from __future__ import annotations

import dataclasses
import posixpath
from pathlib import Path

from kg.ingest import gitio
from kg.ingest.files import decode_markdown_bytes
from kg.ingest.links import MARKDOWN_SUFFIXES, WikiIndex
from kg.ingest.lint import find_dangling
from kg.ingest.markdown import parse_text
from kg.ingest.schema_map import load_schema_map
from kg.ingest.secrets import Allowlist, scan_text
from kg.ingest.targets import is_project_markdown
from kg.parsed.model import REFERENCES, ParsedDocument, ParseProblem

_PATHSPECS = tuple(f"*{suffix}" for suffix in MARKDOWN_SUFFIXES)


def _target_path(node_id: str) -> str | None:
    if node_id.startswith("document:"):
        return node_id.removeprefix("document:")
    if node_id.startswith("section:"):
        return node_id.removeprefix("section:").partition("#")[0]
    return None


def lint_staged(root: Path) -> list[ParseProblem]:
    """Integrity problems the staged Markdown of the repository at ``root`` would commit.

    Raises:
        GitError: ``root`` is not a git work tree.
        ValidationError: the project's schema map is malformed.
    """
    changes = gitio.staged_changes(root)
    policy_problems = _lint_staged_policies(root, changes)
    staged = sorted({c.path for c in changes if c.status != "D" and is_project_markdown(c.path)})
    deleted = {c.path for c in changes if c.status == "D" and is_project_markdown(c.path)}
    if not staged and not deleted:
        return policy_problems
    modified = {c.path for c in changes if c.status not in ("A", "D")} & set(staged)
    schema = load_schema_map(root)
    indexed = [p for p in gitio.indexed_files(root) if is_project_markdown(p)]
    wiki = WikiIndex(indexed)

    allow = Allowlist.load(root)

    def parse(
        paths: list[str], scan: bool = False
    ) -> tuple[dict[str, ParsedDocument], list[ParseProblem]]:
        blobs = gitio.read_index_blobs(root, paths)
        docs: dict[str, ParsedDocument] = {}
        problems: list[ParseProblem] = []
        for path in paths:
            if path not in blobs:
                continue
            text, problem = decode_markdown_bytes(blobs[path], path)
            if text is None:
                assert problem is not None
                problems.append(problem)
                docs[path] = ParsedDocument(path, "", (), (), (problem,))
            else:
                docs[path] = parse_text(path, text, schema, wiki)
                problems += docs[path].problems
                if scan:  # what the commit would record: a secret must not get in
                    problems += [f.problem() for f in scan_text(path, text, allow)]
        return docs, problems

    mine, problems = parse(staged, scan=True)
    checked = set(staged) | deleted
    linked = {
        target
        for doc in mine.values()
        for edge in doc.edges
        if edge.edge_type == REFERENCES and (target := _target_path(edge.to_node)) is not None
    }
    needles = {posixpath.splitext(posixpath.basename(p))[0] for p in modified | deleted}
    referrers = set(gitio.grep_index(root, needles, _PATHSPECS)) if needles else set()
    others = sorted(((linked & set(indexed)) | referrers) - checked)
    context, _ = parse([p for p in others if is_project_markdown(p)])
    lint_set = list(mine.values()) + [
        dataclasses.replace(
            doc,
            edges=tuple(e for e in doc.edges if _target_path(e.to_node) in checked),
            problems=(),
        )
        for doc in context.values()
    ]
    problems += find_dangling(lint_set) + policy_problems
    return sorted(set(problems), key=lambda p: (p.path, p.line, p.message))


def _lint_staged_policies(root: Path, changes: list[gitio.Change]) -> list[ParseProblem]:
    """The staged policy files, checked as staged, when the commit touches any of them."""
    from kg.governance.files import is_policy_file, policy_folder
    from kg.governance.lint import lint_policy_texts

    folder = policy_folder(root)
    if not any(is_policy_file(c.path, folder) for c in changes):
        return []
    paths = [p for p in gitio.indexed_files(root) if is_policy_file(p, folder)]
    blobs = gitio.read_index_blobs(root, paths)
    texts = {p: blob.decode("utf-8", "replace") for p, blob in blobs.items()}
    return lint_policy_texts(root, texts)
