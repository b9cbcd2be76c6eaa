"""What ``kg`` imports to start: a commit's post-commit sync pays for every module."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from backfill import importer
from kg.cli import backfill as backfill_cli
from kg.cli import main, sync_command
from kg.cli.app import AS_OF_ENV, COMMANDS, load_command
from kg.read import as_of


def test_building_the_cli_imports_no_command_implementations() -> None:
    heavy = [
        "numpy", "httpx", "backfill.importer", "kg.context.service", "kg.lineage", "kg.search",
        "kg.cli.audit", "kg.cli.ingest", "kg.cli.db", "markdown_it", "mcp", "asyncpg",
    ]  # fmt: skip
    code = f"import sys, kg.cli.app; print([m for m in {heavy!r} if m in sys.modules])"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_help_line_kg_help_shows_is_the_commands_own(name: str) -> None:
    real = load_command(name)
    assert COMMANDS[name].help == real.get_short_help_str(limit=300)


def test_the_as_of_variable_is_the_audits() -> None:
    assert AS_OF_ENV == as_of.AS_OF_ENV


def test_the_chunk_limit_of_the_option_is_the_importers() -> None:
    assert backfill_cli.MAX_CHUNK == importer.MAX_CHUNK


def test_the_entry_point_loads_neither_typer_nor_the_commands() -> None:
    code = "import sys, kg.cli.main; print('typer' in sys.modules, 'kg.cli.app' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.split() == ["False", "False"]


@pytest.mark.parametrize(
    ("argv", "full"), [(["kg", "sync"], False), (["kg", "sync", "--full"], True)]
)
def test_plain_sync_skips_typer(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], full: bool
) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(sync_command, "main", lambda f, worktree=False: calls.append(f) or 3)
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exited:
        main.app()
    assert calls == [full] and exited.value.code == 3


def test_anything_else_goes_to_the_typer_app(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sync_command, "main", lambda f, worktree=False: pytest.fail("fast path taken")
    )
    monkeypatch.setattr(sys, "argv", ["kg", "sync", "--help"])
    with pytest.raises(SystemExit) as exited:
        main.app()
    assert exited.value.code == 0


def test_the_sync_path_imports_neither_rich_nor_multiprocessing() -> None:
    """``kg sync`` prints plain lines and parses one file in process: rich (~0.05 s) and the
    process pool's modules are for other commands and large ingests."""
    unwanted = ["rich", "multiprocessing", "concurrent.futures.process", "typer"]
    code = (
        "import sys, kg.cli.sync_command, kg.ingest.service, kg.runtime, kg.host.embedded; "
        f"print([m for m in {unwanted!r} if m in sys.modules])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.strip() == "[]"


def test_sync_preloads_numpy_only_after_its_own_imports() -> None:
    """The background import of numpy overlaps the sync's waits on git and the database; run
    alongside the main thread's imports it would only take turns with them."""
    code = """
import asyncio, sys
import kg.embeddings.factory as factory
seen = []
wanted = ("kg.ingest.service", "kg.runtime")
factory.preload_in_background = lambda env=None: seen.append(all(m in sys.modules for m in wanted))
def stop(coro):
    coro.close()
    print(seen)
    sys.exit(0)
asyncio.run = stop
from kg.cli.sync_command import sync
sync(False)
"""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert result.stdout.strip() == "[True]"
