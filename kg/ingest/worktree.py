"""The working tree into the graph: ``kg sync --worktree`` (one pass) and each batch of saves
``kg watch`` sees (:mod:`kg.ingest.watch`) run :func:`sync_worktree`.

A pass first brings the graph up to HEAD with :func:`~kg.ingest.service.sync_project` (when
HEAD moved since the last sync, or always for a whole pass), then ingests the files that
differ from HEAD: modified, added, untracked but not ignored (git or ``.kgignore``), deleted.
Their events are the ones ``kg sync`` appends, with the same provenance rules
(:mod:`kg.ingest.provenance`): a file that differs from HEAD is sourced
``path@sha256:<hash>`` (``path@worktree`` for a removal) and its document is marked as
working-tree state, so the sync of the commit that later holds it records the committed state.

The files a pass found differing are kept in ``.kg/sync-state.json``, and the next whole pass
looks at them again: an edit reverted (``git checkout -- FILE``) or a deleted file restored no
longer shows in ``git status``, yet the graph still holds the edit or lacks the file.

Policy files go first, as in ``kg sync``, and while one has an error a pass ingests nothing
and raises :class:`~kg.errors.PolicyFilesError` (fail closed): a watcher runs unattended, and
a file saved while the policy that hides it is half-written must not reach the graph
ungoverned. ``kg watch`` prints the error and goes on watching; the save that fixes the
policy file makes the next pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from posixpath import basename

from kg.events import EventMetadata
from kg.ingest import gitio
from kg.ingest.files import DEFAULT_MAX_BYTES
from kg.ingest.parts import IngestParts
from kg.ingest.pipeline import Options
from kg.ingest.report import IngestReport, SyncReport
from kg.ingest.schema_map import SCHEMA_FILES
from kg.ingest.service import _require_ingest, _run, sync_project
from kg.ingest.sync_state import (
    last_synced,
    record_worktree,
    state_key,
    sync_lock,
    worktree_paths,
)
from kg.ingest.targets import is_project_file, resolve_targets
from kg.ingest.walker import GITIGNORE, KGIGNORE, drop_ignored
from kg.parsed.model import ParseProblem
from kg.progress import NO_PROGRESS, Progress


@dataclass
class WorktreeReport:
    """What one pass did: the commit sync it ran first (if any), the working-tree files it
    looked at and what ingesting them appended."""

    committed: SyncReport | None = None
    paths: list[str] = field(default_factory=list)
    rescanned: bool = False
    ingest: IngestReport | None = None
    policies: str = ""

    def summary(self) -> str:
        parts: list[str] = []
        if self.committed is not None and self.committed.mode != "up to date":
            parts.append(f"commit: {self.committed.summary()}")
        what = "whole project rescanned" if self.rescanned else f"{len(self.paths)} file(s)"
        tree = f"working tree: {what}"
        if self.ingest is not None:
            tree += f"; {self.ingest.summary()}"
        parts.append(tree)
        if self.policies:
            parts.append(self.policies)
        return "; ".join(parts)

    @property
    def all_problems(self) -> list[ParseProblem]:
        found: list[ParseProblem] = []
        if self.committed is not None and self.committed.ingest is not None:
            found += self.committed.ingest.problems
        if self.ingest is not None:
            found += self.ingest.problems
        return found


def rescans(relpath: str) -> bool:
    """A change to this file can change what every file becomes or whether it is ingested:
    the schema map, a ``.gitignore`` or ``.kgignore``."""
    return relpath in SCHEMA_FILES or basename(relpath) in (GITIGNORE, KGIGNORE)


async def sync_worktree(
    rt: IngestParts,
    paths: Sequence[str] | None = None,
    *,
    actor: str = "kg sync --worktree",
    acting: str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    progress: Progress = NO_PROGRESS,
) -> WorktreeReport:
    """Bring the graph in step with the working tree (see the module docstring).

    ``paths`` (project-relative) limits the pass to files known to have changed, as ``kg
    watch`` reports them (the commit sync then runs only if HEAD moved); None is a whole pass.
    A path that is not a spec or source file a project scan would take, or that git or
    ``.kgignore`` ignore, is left out; a change to the schema map or an ignore file rescans
    the whole project (only files whose fingerprint changed are parsed).

    Raises:
        PolicyFilesError: a policy file has an error; nothing was ingested.
        ValidationError: the project's schema map is malformed.
        ActionRefusedError: a policy does not let ``acting`` ingest these files.
    """
    from kg.governance.enforce import cli_actor
    from kg.governance.sync import apply_policy_files, checked_policy_files

    root = rt.settings.project_root
    state_dir = rt.settings.state_dir
    key = state_key(rt.url, rt.scope)
    report = WorktreeReport()
    await checked_policy_files(root)  # before the commit's sync too: it may be up to date
    head = await asyncio.to_thread(gitio.head_commit, root)
    if paths is None or _head_moved(state_dir, key, head):
        report.committed = await sync_project(
            rt, actor=actor, acting=acting, max_bytes=max_bytes, progress=progress
        )
        head = report.committed.to_commit
    meta = EventMetadata(actor=actor)
    async with sync_lock(state_dir):
        policies = await apply_policy_files(rt, meta)
        if policies.events:
            report.policies = policies.summary()
        if head is None and paths is None:
            return report  # outside git, sync_project scanned every file
        previous = worktree_paths(state_dir, key) if head is not None else []
        if paths is None:
            dirty = await asyncio.to_thread(gitio.worktree_changes, root)
            named = {p for p in [*dirty, *previous] if is_project_file(p)}
        else:
            named = {p for p in paths if is_project_file(p)}
            report.rescanned = any(rescans(p) for p in paths)
        wanted = await asyncio.to_thread(drop_ignored, root, sorted(named))
        report.paths = wanted
        if report.rescanned:
            targets = await asyncio.to_thread(resolve_targets, root, None)
        elif wanted:
            targets = await asyncio.to_thread(resolve_targets, root, wanted)
        else:
            return report
        await _require_ingest(rt, acting or cli_actor(), targets, meta)
        options = Options(
            metadata=meta, report_missing=False, max_bytes=max_bytes, progress=progress
        )
        report.ingest = await _run(rt, targets, options)
        if head is not None:
            checked = sorted(named)
            now = await asyncio.to_thread(_differing, root, checked)
            kept = set(previous) - set(checked) if paths is not None else set()
            record_worktree(state_dir, key, sorted(kept | now))
    return report


def _head_moved(state_dir: Path, key: str, head: str | None) -> bool:
    synced = last_synced(state_dir, key)
    return head is not None and (synced is None or synced.commit != head)


def _differing(root: Path, relpaths: list[str]) -> set[str]:
    if not relpaths:
        return set()
    try:
        return gitio.differing_from_head(root, relpaths)
    except gitio.GitError:
        return set(relpaths)
