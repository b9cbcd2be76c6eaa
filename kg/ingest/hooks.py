"""``kg hooks install``: git hooks that keep the graph in step with the repository.

* ``pre-commit`` lints the staged Markdown (:mod:`kg.ingest.staged`) and blocks the commit on
  integrity errors. If kg itself cannot run (moved virtualenv, crash), the commit goes ahead
  with a warning: a broken tool must not hold the repository hostage.
* ``post-commit`` syncs the graph (:func:`kg.ingest.service.sync_project`). It never fails or
  blocks the commit: every error goes to ``.kg/hooks.log``, and above a configurable number of
  changed Markdown files the sync detaches and runs in the background. A database that is down
  or does not answer within ``KG_HOOK_TIMEOUT`` seconds skips the sync with one line saying to
  run ``kg sync`` later.

The scripts call this Python interpreter (the one ``kg hooks install`` ran with) on
:mod:`kg.cli.hook_entry`: the project's warm command host runs the hook when it is up, else
:mod:`kg.cli.hook_runner` (which imports far less than the CLI) runs in the hook's process,
so a commit pays for a lint, not for loading every ``kg`` command.
"""

from __future__ import annotations

import shlex
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ConfigurationError
from kg.ingest import gitio

MARKER = "# installed by kg hooks install"
HOOKS = ("pre-commit", "post-commit")
DEFAULT_BACKGROUND_ABOVE = 20
LINT_FAILED = 65  # the pre-commit runner's "integrity errors" exit code (EX_DATAERR)
SYNC_SKIPPED = 75  # the post-commit runner's "database unavailable" exit code (EX_TEMPFAIL)

_PRE_COMMIT = """#!/bin/sh
{marker}: lint the staged Markdown; block the commit on integrity errors.
{env}"$KG_PYTHON" -m kg.cli.hook_entry pre-commit
status=$?
if [ "$status" -eq {lint_failed} ]; then
    echo "kg: commit blocked by the errors above (fix them, or commit with --no-verify)" >&2
    exit 1
fi
if [ "$status" -ne 0 ]; then
    echo "kg: pre-commit lint could not run (exit $status); commit allowed" >&2
fi
exit 0
"""

_POST_COMMIT = """#!/bin/sh
{marker}: sync the graph; never fails the commit (errors go to .kg/hooks.log).
{env}top=${{KG_PROJECT_ROOT:-$(git rev-parse --show-toplevel 2>/dev/null || pwd)}}
mkdir -p "$top/.kg" 2>/dev/null
"$KG_PYTHON" -m kg.cli.hook_entry post-commit --background-above {above} \\
    >>"$top/.kg/hooks.log" 2>&1 </dev/null
status=$?
if [ "$status" -eq {skipped} ]; then
    echo "kg: graph sync skipped, the database is unavailable (see $top/.kg/hooks.log);" \\
        "run \\`kg sync\\` when it is back" >&2
elif [ "$status" -ne 0 ]; then
    echo "kg: post-commit sync failed; see $top/.kg/hooks.log" >&2
fi
exit 0
"""


@dataclass(frozen=True, slots=True)
class Installed:
    path: Path
    replaced: Path | None  # where a foreign hook was moved, if any


def hooks_dir(root: Path) -> Path:
    """The repository's hooks folder (honours ``core.hooksPath``)."""
    out = gitio.git(root, "rev-parse", "--git-path", "hooks").decode().strip()
    path = Path(out)
    return path if path.is_absolute() else root / path


def script(hook: str, *, background_above: int, python: str | None = None) -> str:
    env = f"KG_PYTHON=${{KG_PYTHON:-{shlex.quote(python or sys.executable)}}}\n"
    if hook == "pre-commit":
        return _PRE_COMMIT.format(marker=MARKER, env=env, lint_failed=LINT_FAILED)
    return _POST_COMMIT.format(marker=MARKER, env=env, above=background_above, skipped=SYNC_SKIPPED)


def install_hooks(
    root: Path, *, background_above: int = DEFAULT_BACKGROUND_ABOVE, force: bool = False
) -> list[Installed]:
    """Write both hooks. A hook kg did not write is left alone unless ``force``, in which case
    it is kept as ``<hook>.before-kg``.

    Raises:
        GitError: ``root`` is not a git repository.
        ConfigurationError: a foreign hook exists and ``force`` is false.
    """
    if background_above < 0:
        raise ConfigurationError("--background-above must be 0 or more")
    folder = hooks_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    foreign = [
        folder / hook
        for hook in HOOKS
        if (folder / hook).exists() and MARKER not in _read(folder / hook)
    ]
    if foreign and not force:
        names = ", ".join(str(p) for p in foreign)
        raise ConfigurationError(
            f"{names} already exist and were not written by kg: rerun with --force to keep "
            "them as <hook>.before-kg and install kg's, or call "
            "`python -m kg.cli.hook_entry pre-commit` (or post-commit) from them yourself"
        )
    installed = []
    for hook in HOOKS:
        path = folder / hook
        replaced = None
        if path in foreign:
            replaced = path.with_name(f"{hook}.before-kg")
            path.replace(replaced)
        path.write_text(script(hook, background_above=background_above), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        installed.append(Installed(path, replaced))
    return installed


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
