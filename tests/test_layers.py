"""The package layers, as declared in pyproject.toml's import-linter contracts (issue 32).

Imports point down only (entry points -> local host -> application services -> runtime ->
read side -> write side -> database and embeddings -> shared leaves), the CLI and the MCP
server are independent, and no modules or packages of kg/ or mcp_server/ import each other
in a circle; ingestion and governance take the runtime's parts, not the runtime. Imports
inside functions count: they keep Python from failing at import time,
not the design from knotting.
"""

from __future__ import annotations

import pkgutil
from pathlib import Path

import pytest
from importlinter import api
from importlinter.application import use_cases

import kg

ROOT = Path(__file__).resolve().parents[1]
CONFIG = str(ROOT / "pyproject.toml")


def test_this_checkout_is_the_one_checked() -> None:
    """grimp reads the packages Python imports: they must be this checkout's."""
    assert Path(kg.__file__).resolve().parent == ROOT / "kg"


def test_the_import_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    kept = use_cases.lint_imports(config_filename=CONFIG, cache_dir=None, is_debug_mode=True)
    report = capsys.readouterr().out
    assert kept, report
    assert "4 kept, 0 broken" in report


def test_every_package_of_kg_has_a_layer() -> None:
    """A new package or module of kg/ must be placed in a layer, or nothing checks it."""
    contracts = api.read_configuration(CONFIG)["contracts_options"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    placed = {
        name.strip() for layer in layers["layers"] for name in layer.replace("|", ":").split(":")
    }
    children = {f"kg.{m.name}" for m in pkgutil.iter_modules(kg.__path__)}
    assert children - placed == set(), "add these to a layer in pyproject.toml"
    assert placed - children - {"mcp_server"} == set(), "layers name modules that are gone"


def test_the_only_exception_is_kg_mcp() -> None:
    """Exceptions are listed with their reason in pyproject.toml; this pins their number."""
    contracts = api.read_configuration(CONFIG)["contracts_options"]
    ignored = {i for c in contracts for i in c.get("ignore_imports", [])}
    assert ignored == {"kg.cli.mcp_command -> mcp_server.serve"}
