"""The last synced commit, kept in the project's ``.kg/sync-state.json``, and the sync lock.

The state is keyed by database and scope: the same checkout synced into two databases (or two
projects of one) keeps one commit for each, so switching ``KG_DATABASE_URL`` never makes a sync
skip files the other database has not seen. The database is identified by a hash of its
password-free URL. A URL does not say what the database holds, though (it may have been reset,
restored from a backup or replaced since), so each entry also keeps a *log mark*: the position
and hash of the tenant's last event when the sync ended. The next sync trusts the entry only if
the database still holds that event with that hash (see :func:`kg.ingest.state.holds_mark`).
Writes go to a temporary file renamed into place, so a crash never leaves half a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from kg.config import Scope, ensure_state_dir
from kg.db.urls import redact

STATE_FILE = "sync-state.json"
LOCK_FILE = "sync.lock"


def state_key(url: str, scope: Scope) -> str:
    database = hashlib.sha256(redact(url).encode()).hexdigest()[:16]
    return f"{database}/{scope.tenant_id}/{scope.project_id}"


def _load(state_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((state_dir / STATE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


LogMark = tuple[int, str]
"""(position, hash) of the tenant's last event after a sync."""


@dataclass(frozen=True, slots=True)
class Synced:
    """One entry of the state: the commit synced, and the log mark it was synced into."""

    commit: str
    #: None: the tenant's log was empty (nothing was ingested)
    log: LogMark | None
    #: False for an entry written before log marks existed: it cannot be checked
    has_mark: bool = True


def last_synced(state_dir: Path, key: str) -> Synced | None:
    entry = _load(state_dir).get("synced", {}).get(key)
    if not isinstance(entry, dict) or not isinstance(entry.get("commit"), str):
        return None
    if "log" not in entry:
        return Synced(entry["commit"], None, has_mark=False)
    log = entry["log"]
    if log is None:
        return Synced(entry["commit"], None)
    if (
        isinstance(log, dict)
        and isinstance(log.get("position"), int)
        and isinstance(log.get("hash"), str)
    ):
        return Synced(entry["commit"], (log["position"], log["hash"]))
    return Synced(entry["commit"], None, has_mark=False)


def record_synced(state_dir: Path, key: str, commit: str, log: LogMark | None) -> None:
    data = _load(state_dir)
    synced = data.setdefault("synced", {})
    if not isinstance(synced, dict):
        synced = data["synced"] = {}
    synced[key] = {
        "commit": commit,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "log": None if log is None else {"position": log[0], "hash": log[1]},
    }
    _write(state_dir, data)


@contextlib.asynccontextmanager
async def sync_lock(state_dir: Path) -> AsyncIterator[None]:
    """One sync at a time per project (a background post-commit sync and a manual one would
    otherwise diff against each other's half-written work and retry). Waiting for the lock
    happens in a thread, so the event loop stays free."""
    handle = await asyncio.to_thread(_open_lock, state_dir)
    with handle:
        await asyncio.to_thread(fcntl.flock, handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _open_lock(state_dir: Path) -> TextIO:
    ensure_state_dir(state_dir)
    return (state_dir / LOCK_FILE).open("a")


def worktree_paths(state_dir: Path, key: str) -> list[str]:
    """The files the last working-tree pass (``kg sync --worktree``, ``kg watch``) found
    differing from HEAD: the next pass looks at them again, so an edit reverted or a deleted
    file restored since then (both invisible to ``git status``) is brought back in step."""
    entry = _load(state_dir).get("worktree", {}).get(key)
    if not isinstance(entry, list):
        return []
    return [p for p in entry if isinstance(p, str)]


def record_worktree(state_dir: Path, key: str, paths: list[str]) -> None:
    data = _load(state_dir)
    kept = data.setdefault("worktree", {})
    if not isinstance(kept, dict):
        kept = data["worktree"] = {}
    kept[key] = sorted(set(paths))
    _write(state_dir, data)


def _write(state_dir: Path, data: dict[str, Any]) -> None:
    ensure_state_dir(state_dir)
    tmp = state_dir / f".{STATE_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, state_dir / STATE_FILE)
