"""Runtime settings, read from the environment once per process.

``KG_DATABASE_URL`` selects an external PostgreSQL; without it the embedded server in the
project's ``.kg/`` folder is used. ``KG_TENANT`` and ``KG_PROJECT`` fix the scope every read and
write runs in: they are configuration, never a free-form argument an agent could change.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kg.errors import ConfigurationError
from kg.paths import find_project_root

_SCOPE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

#: tokens a context graph may use, unless a request or KG_TOKEN_BUDGET says otherwise
DEFAULT_TOKEN_BUDGET = 800


def check_scope_id(kind: str, value: str) -> str:
    """Return ``value`` if it is a valid tenant or project id, else raise a clear error."""
    if not _SCOPE_ID.match(value):
        raise ConfigurationError(
            f"{kind} id {value!r} is not valid: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return value


@dataclass(frozen=True)
class Scope:
    """The tenant and project every event and projected row belongs to."""

    tenant_id: str
    project_id: str

    def __post_init__(self) -> None:
        check_scope_id("tenant", self.tenant_id)
        check_scope_id("project", self.project_id)


# What `.kg/.gitignore` says: kg's live state (the embedded database, sync state, logs, locks)
# must never reach git (a commit of a live data folder is huge, and fails while the server
# writes), while the configuration meant to be versioned stays trackable.
STATE_GITIGNORE = """\
# Written by kg: its local state (embedded database, sync state, logs, locks) is not for git.
# The configuration below is meant to be versioned.
*
!.gitignore
!schema.yaml
!policies/
!policies/**
!rules/
!rules/**
"""


def ensure_state_dir(state_dir: Path) -> Path:
    """Create ``state_dir`` if needed, with a ``.gitignore`` that keeps kg's state out of git.

    Every path that creates the folder goes through here. An existing ``.gitignore`` is left
    alone (the user may have edited it)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    ignore = state_dir / ".gitignore"
    if not ignore.exists():
        tmp = state_dir / f".gitignore.{os.getpid()}.tmp"
        tmp.write_text(STATE_GITIGNORE, encoding="utf-8")
        os.replace(tmp, ignore)
    return state_dir


@dataclass(frozen=True)
class Settings:
    database_url: str | None
    scope: Scope
    project_root: Path
    #: the project's default context-graph token budget (``KG_TOKEN_BUDGET``); a call's own wins
    token_budget: int = DEFAULT_TOKEN_BUDGET

    @property
    def state_dir(self) -> Path:
        """Project-local folder for the embedded database, logs and sync state."""
        return self.project_root / ".kg"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> Settings:
        env = os.environ if env is None else env
        root = Path(env["KG_PROJECT_ROOT"]) if env.get("KG_PROJECT_ROOT") else None
        return cls(
            database_url=env.get("KG_DATABASE_URL") or None,
            scope=Scope(env.get("KG_TENANT", "default"), env.get("KG_PROJECT", "default")),
            project_root=(root or find_project_root(cwd)).resolve(),
            token_budget=_token_budget(env.get("KG_TOKEN_BUDGET")),
        )


def _token_budget(value: str | None) -> int:
    if not value:
        return DEFAULT_TOKEN_BUDGET
    if not value.strip().isdigit() or not 1 <= int(value) <= 1_000_000:
        raise ConfigurationError(
            f"KG_TOKEN_BUDGET={value!r} is not valid: use a whole number of tokens, 1 to 1000000"
        )
    return int(value)
