"""What the git hooks run: ``python -m kg.cli.hook_runner pre-commit|post-commit|sync``.

Kept apart from the CLI so that a commit does not import every command. ``post-commit`` and
``sync`` write one line per run to standard output, which the hook script appends to
``.kg/hooks.log``; on error they log the reason and exit 1 (the script then tells the user
where to look and still exits 0: the commit is never failed). A database that cannot be
reached, or does not answer within ``KG_HOOK_TIMEOUT`` seconds (default 2), makes them exit
:data:`SKIPPED` instead, and the script says in one line that the sync was skipped and to run
``kg sync`` later.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import traceback
from datetime import UTC, datetime
from pathlib import Path

from kg.config import Settings, ensure_state_dir
from kg.errors import DatabaseUnavailableError, KgError, SchemaNotReadyError
from kg.ingest import gitio
from kg.ingest.hooks import DEFAULT_BACKGROUND_ABOVE, LINT_FAILED, SYNC_SKIPPED
from kg.ingest.sync_state import STATE_FILE
from kg.ingest.targets import is_project_file

LOG_FILE = "hooks.log"
_MAX_LOG = 1_000_000
SKIPPED = SYNC_SKIPPED  # the database is unavailable: the sync was skipped, not failed
TIMEOUT_ENV = "KG_HOOK_TIMEOUT"
DEFAULT_TIMEOUT = 2.0
#: seconds any one statement of a sync the commit waits for may take: a server that accepted
#: the connection and then stalls must not hold the commit either
STATEMENT_TIMEOUT = 10.0


def _log(message: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} [{os.getpid()}] {message}", flush=True)


def pre_commit(root: Path) -> int:
    from kg.ingest.staged import lint_staged

    try:
        problems = lint_staged(root)
    except KgError as error:
        print(f"kg: pre-commit lint failed: {error}", file=sys.stderr)
        return 2
    errors = [p for p in problems if p.severity == "error"]
    for problem in problems:
        prefix = "" if problem.severity == "error" else "warning: "
        print(f"{problem.path}:{problem.line}: {prefix}{problem.message}", file=sys.stderr)
    if errors:
        print(f"kg: {len(errors)} integrity error(s) in the staged Markdown", file=sys.stderr)
        return LINT_FAILED
    return 0


def changed_in_head(root: Path) -> int:
    """Markdown and source files the sync after this commit will read: those the commit
    changed, or every tracked one before the first sync (which is a full scan)."""
    if not (root / ".kg" / STATE_FILE).exists():
        paths = gitio.indexed_files(root)
    else:
        out = gitio.git(
            root,
            "diff-tree",
            "-r",
            "--relative",
            "--name-only",
            "--no-commit-id",
            "-z",
            "--root",
            "HEAD",
        )
        paths = [p.decode("utf-8", "replace") for p in out.split(b"\0") if p]
    return sum(1 for p in paths if is_project_file(p))


def post_commit(root: Path, background_above: int) -> int:
    _rotate(root / ".kg" / LOG_FILE)
    try:
        changed = changed_in_head(root)
    except KgError as error:
        _log(f"post-commit: error: {error}")
        return 1
    if changed > background_above:
        ensure_state_dir(root / ".kg")
        log = (root / ".kg" / LOG_FILE).open("a")
        with log:
            child = subprocess.Popen(
                [sys.executable, "-m", "kg.cli.hook_runner", "sync"],
                cwd=root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
                preexec_fn=_lower_priority,
            )
        _log(f"post-commit: {changed} Markdown files to sync; syncing in the background")
        _log(f"post-commit: background sync is pid {child.pid}")
        return 0
    return sync(foreground=True)


#: how much lower than the committer's the background sync's CPU priority is (``nice``)
BACKGROUND_NICE = 10


def _lower_priority() -> None:
    """In the background sync's process: yield the CPU to what the developer does next (an
    editor, a build, the next commit); nobody waits for this sync."""
    os.nice(BACKGROUND_NICE)


def sync(*, foreground: bool = False) -> int:
    """Run ``sync_project`` once and log its summary (or the error).

    Returns :data:`SKIPPED` when the database cannot be reached or does not answer in time,
    which the post-commit script turns into one line telling the user to run ``kg sync``
    later. ``foreground`` (the commit is waiting) also bounds every statement.
    """
    try:
        summary = asyncio.run(_sync(foreground=foreground))
    except SchemaNotReadyError as error:
        _log(f"sync: error: {error}")
        return 1
    except (DatabaseUnavailableError, TimeoutError) as error:
        reason = str(error)
        if isinstance(error, TimeoutError) or isinstance(error.__cause__, TimeoutError):
            reason = f"no answer within {hook_timeout():g} s" + (f" ({reason})" if reason else "")
        _log(f"sync: skipped, the database is unavailable: {reason}")
        _log("sync: run `kg sync` when the database is back to bring the graph up to date")
        return SKIPPED
    except KgError as error:
        _log(f"sync: error: {error}")
        return 1
    except Exception:  # fail-open: the log gets everything, the commit nothing
        _log("sync: unexpected error:\n" + traceback.format_exc().rstrip())
        return 1
    _log(f"sync: {summary}")
    return 0


def hook_timeout() -> float:
    """Seconds a hook waits for the database to accept a connection (``KG_HOOK_TIMEOUT``)."""
    try:
        value = float(os.environ.get(TIMEOUT_ENV, "") or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if value > 0 else DEFAULT_TIMEOUT


async def _sync(*, foreground: bool = False) -> str:
    from kg.embeddings.factory import preload_in_background
    from kg.host.database import open_runtime
    from kg.ingest.service import sync_project

    preload_in_background()  # numpy loads while the database and git are being asked

    limit = hook_timeout()
    async with open_runtime(
        connect_timeout=limit,
        command_timeout=max(limit, STATEMENT_TIMEOUT) if foreground else None,
    ) as rt:
        report = await sync_project(rt, actor="kg post-commit hook")
    summary = report.summary()
    if report.ingest is not None:
        for problem in report.ingest.errors:
            summary += f"\n  {problem}"
    return summary


def _rotate(log: Path) -> None:
    try:
        if log.stat().st_size > _MAX_LOG:
            log.replace(log.with_name(LOG_FILE + ".1"))
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kg.cli.hook_runner")
    parser.add_argument("hook", choices=("pre-commit", "post-commit", "sync"))
    parser.add_argument("--background-above", type=int, default=DEFAULT_BACKGROUND_ABOVE)
    args = parser.parse_args(argv)
    try:
        root = Settings.from_env().project_root
    except KgError as error:
        print(f"kg: {error}", file=sys.stderr)
        return 2
    if args.hook == "pre-commit":
        return pre_commit(root)
    if args.hook == "post-commit":
        return post_commit(root, args.background_above)
    return sync()


if __name__ == "__main__":
    sys.exit(main())
