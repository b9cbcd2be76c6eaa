"""``kg watch``: keep the graph in step with the working tree as files are saved.

One whole pass of :func:`~kg.ingest.worktree.sync_worktree` first, then the project folder is
watched (``watchfiles``: inotify, FSEvents or ReadDirectoryChangesW through Rust's notify).
Changes are grouped: a batch closes :data:`STEP_MS` after the last change seen, or
:data:`DEBOUNCE_MS` after its first (an editor's write-rename-chmod, or a ``git checkout`` of
500 files, is one or a few batches, not 500 passes), and each batch is one
:func:`~kg.ingest.worktree.sync_worktree` over the files it names. Saves made while a pass runs
are kept by the watcher and make the next batch.

Only what can matter is let through: spec and source files, policy files, the schema map,
ignore files, and git's HEAD and branch refs (a commit or a checkout: the pass then syncs the
commit first). ``.git`` objects, kg's own ``.kg/`` state (the embedded database writes there)
and everything else are dropped in the watcher's filter.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from kg.errors import KgError
from kg.ingest.parts import IngestParts
from kg.ingest.schema_map import SCHEMA_FILES
from kg.ingest.targets import is_ingestible
from kg.ingest.worktree import WorktreeReport, rescans, sync_worktree

log = logging.getLogger(__name__)

#: a batch closes this long after the last change seen...
STEP_MS = 50
#: ...or this long after its first one, whichever comes first (a save is searchable within
#: about DEBOUNCE_MS plus the pass)
DEBOUNCE_MS = 300
_GIT_MOVES = (".git/HEAD", ".git/logs/HEAD", ".git/packed-refs")

OnPass = Callable[[WorktreeReport], Awaitable[None] | None]
OnError = Callable[[KgError], None]


def relevant(root: Path, policy_folder: str) -> Callable[[object, str], bool]:
    """The watcher's filter: whether a changed absolute path can matter to the graph."""
    prefix = str(root.resolve()) + "/"
    plain_prefix = str(root) + "/"

    def keep(_change: object, path: str) -> bool:
        rel = _relative(path, prefix, plain_prefix)
        if rel is None:
            return False
        if rel.startswith(".git/"):
            return rel in _GIT_MOVES or (
                rel.startswith(".git/refs/heads/") and not rel.endswith(".lock")
            )
        if rel.startswith(policy_folder + "/"):
            return rel.endswith((".yaml", ".yml"))
        if rel in SCHEMA_FILES or rescans(rel):
            return True
        if rel.startswith(".kg/"):
            return False
        return is_ingestible(rel)

    return keep


def _relative(path: str, *prefixes: str) -> str | None:
    for prefix in prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return None


def batch_paths(root: Path, changed: Iterable[str]) -> list[str]:
    """Project-relative paths of a batch (the filter let them through), without git's own
    files, which only say that HEAD may have moved: :func:`sync_worktree` checks that."""
    found = {_relative(p, str(root.resolve()) + "/", str(root) + "/") for p in changed}
    return sorted(p for p in found if p is not None and not p.startswith(".git/"))


async def watch_project(
    rt: IngestParts,
    *,
    stop: asyncio.Event | None = None,
    on_pass: OnPass | None = None,
    on_error: OnError | None = None,
    actor: str = "kg watch",
    debounce_ms: int = DEBOUNCE_MS,
    step_ms: int = STEP_MS,
) -> None:
    """Start watching, run a whole pass, then one pass per batch of saves until ``stop`` is
    set.

    ``on_pass`` gets each pass's report; a pass that fails with a :class:`KgError` (a policy
    refusing the actor, a malformed schema map, a conflict) goes to ``on_error`` (default:
    logged) and watching goes on: the next save tries again.
    """
    import watchfiles

    from kg.governance.files import policy_folder

    root = rt.settings.project_root
    watch_filter = relevant(root, policy_folder(root))

    async def run(paths: list[str] | None) -> None:
        try:
            report = await sync_worktree(rt, paths, actor=actor)
        except KgError as error:
            if on_error is None:
                log.warning("kg watch: %s", error)
            else:
                on_error(error)
            return
        if on_pass is not None:
            done = on_pass(report)
            if done is not None:
                await done

    batches = watchfiles.awatch(
        root,
        watch_filter=watch_filter,
        debounce=debounce_ms,
        step=step_ms,
        stop_event=stop,
        ignore_permission_denied=True,
    )
    # The watcher starts (synchronously, in the generator's first step) before the first pass,
    # and keeps what changes meanwhile: a save during the pass is not lost.
    pending = asyncio.ensure_future(batches.__anext__())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    try:
        await run(None)
        while True:
            try:
                changes = await pending
            except StopAsyncIteration:
                return
            await run(batch_paths(root, (path for _, path in changes)))
            pending = asyncio.ensure_future(batches.__anext__())
    finally:
        if not pending.done():
            pending.cancel()
        await batches.aclose()
