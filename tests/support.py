"""Running the ``kg`` command as a user does, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli_env(db_url: str, **extra: str) -> dict[str, str]:
    """The environment of a ``kg`` subprocess on the test database, in the fixtures' scope."""
    return {
        **os.environ,
        "KG_DATABASE_URL": db_url,
        "KG_TENANT": "acme",
        "KG_PROJECT": "webshop",
        "KG_EMBEDDER": "hashing",
        **extra,
    }


def kg(
    *args: str, env: dict[str, str], cwd: Path, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """``kg ARGS...`` as a real subprocess (wide terminal, so tables are not wrapped)."""
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", *args],
        env={"COLUMNS": "200", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
