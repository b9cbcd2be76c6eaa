"""Running the ``kg`` command as a user does, for the CLI tests."""

from __future__ import annotations

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


def kg(
    *args: str, env: dict[str, str], cwd: Path, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """``kg ARGS...`` as a real subprocess (wide terminal, so tables are not wrapped)."""
    return subprocess.run(
        [sys.executable, "-m", "kg.cli", *args],
        env={**env, "COLUMNS": "200"},  # also over a COLUMNS inherited (80 in an xdist worker)
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
