"""Running the ``kg`` command as a user does, for the CLI tests."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


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


HERE = Path(__file__).resolve().parent
_host: dict[str, Any] = {}
"""This process's warm command host (:mod:`tests.command_host`): its folder and process."""


def command_host() -> str | None:
    """The folder of this pytest process's warm ``kg`` interpreter, started on first use and
    stopped with the process; None when it cannot start (``kg`` then starts cold) or when
    ``KG_TEST_HOST`` is set empty (every ``kg`` of the run starts cold)."""
    if os.environ.get("KG_TEST_HOST") == "":
        return None
    if "state" not in _host:
        import atexit
        import shutil
        import tempfile

        # Short, private: the socket's path must fit in a Unix socket address.
        state = Path(tempfile.mkdtemp(prefix="kg-th-"))
        env = {k: v for k, v in os.environ.items() if k != "KG_DATABASE_URL"}
        env["KG_EMBEDDER"] = "hashing"  # no MiniLM load in the host; a command loads its own
        with (state / "host.log").open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, str(HERE / "command_host.py"), str(state), str(os.getpid())],
                env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, stderr=log, text=True,
            )  # fmt: skip
        ready = proc.stdout.readline() if proc.stdout else ""
        _host.update(state=state if ready.strip() == "ready" else None, proc=proc)

        def stop() -> None:
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            shutil.rmtree(state, ignore_errors=True)

        atexit.register(stop)
    state = _host["state"]
    return None if state is None else str(state)


def kg(
    *args: str, env: dict[str, str], cwd: Path, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """``kg ARGS...`` in a process of its own (wide terminal, so tables are not wrapped).

    Run as the warm host runs a user's command on the embedded server (kg's default there): a
    child forked from this process's warm interpreter (:func:`command_host`), which takes the
    process's descriptors, environment and folder, so a command does not pay ~0.5 s of imports
    first. The commands the product's host never takes (``kg mcp``, ``server``, ``watch``), and
    every command of a test that turns the product's host on (``KG_RESIDENT``), start cold, as
    do the tests that run ``python -m kg.cli`` themselves."""
    host = command_host()
    return subprocess.run(
        [sys.executable, str(HERE / "kg_client.py"), *args],
        # COLUMNS also over an inherited one (80 in an xdist worker)
        env={**env, "COLUMNS": "200", **({"KG_TEST_HOST": host} if host else {})},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


async def append_raw(
    pool: Any,
    scope: Any,
    stream_id: str,
    event_type: str,
    schema_version: int,
    payload_json: str,
    *,
    stream_version: int = 1,
) -> None:
    """Append one event exactly as given (a payload of an older schema, or hashed as an older
    kg hashed it), through the append functions, with a correct chain link."""
    import uuid
    from datetime import UTC, datetime

    from kg.db.tenancy import tenant_transaction
    from kg.events.hashing import canonical_event, chain_hash

    meta = '{"actor":"system"}'
    async with tenant_transaction(pool, scope.tenant_id) as conn:
        head, chain = await conn.fetchrow("SELECT * FROM kg_append_lock($1)", scope.tenant_id)
        event_id, now, prev = str(uuid.uuid4()), datetime.now(UTC), chain or "0" * 64
        digest = chain_hash(
            prev,
            canonical_event(
                position=head + 1, event_id=event_id, tenant_id=scope.tenant_id,
                project_id=scope.project_id, stream_id=stream_id, stream_version=stream_version,
                event_type=event_type, schema_version=schema_version, payload_json=payload_json,
                metadata_json=meta, recorded_at=now, idempotency_key=None,
            ),
        )  # fmt: skip
        await conn.fetchval(
            "SELECT kg_append_events($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            scope.tenant_id, scope.project_id, now, [head + 1], [event_id], [stream_id],
            [stream_version], [event_type], [schema_version], [payload_json], [meta], [prev],
            [digest],
        )  # fmt: skip


async def assert_log_verifies(system_store: Any, tenants: list[str]) -> None:
    """Every tenant's chain verifies and its log has no gap: how every concurrency test ends."""
    from kg.audit.verify import find_position_gaps, verify_tenant

    for tenant in tenants:
        report = await verify_tenant(system_store.pool, tenant)
        assert report.ok, str(report)
        assert await find_position_gaps(system_store.pool, tenant) == []


def wait_for(condition: Callable[[], object], what: str, limit: float = 120.0) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``limit`` seconds (the
    failure mode of a test of background processes, not a measurement)."""
    deadline = time.monotonic() + limit
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
