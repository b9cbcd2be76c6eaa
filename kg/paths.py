"""Where the project is: a module with no imports beyond the standard library, so that the
``kg`` entry point can find the project's resident command host before importing kg."""

from __future__ import annotations

from pathlib import Path

STATE_DIR_NAME = ".kg"


def find_project_root(start: Path | None = None) -> Path:
    """The nearest ancestor holding ``.kg/`` or ``.git/``; the start folder when none does."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / STATE_DIR_NAME).is_dir() or (folder / ".git").exists():
            return folder
    return here
