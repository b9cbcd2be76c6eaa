"""Concurrent writers of one tenant keep its hash chain whole (invariants 3 and 5 together).

Positions staying gapless is not enough: each append must link to the chain head the previous
append left, even when it waited for that append's lock. Every run ends with ``kg audit
verify`` for each tenant and a replay comparison of the projections.
"""

from __future__ import annotations

import asyncio
import sys
import textwrap

from kg.audit.projections_check import verify_projections
from kg.config import Scope
from kg.embeddings import HashingEmbedder
from kg.events import EventStore, NodeAsserted
from kg.runtime import Runtime
from tests.support import assert_log_verifies


async def test_two_tasks_appending_single_events_to_one_tenant_keep_the_chain(
    store: EventStore, system_store: EventStore, scope: Scope
) -> None:
    async def write(writer: int) -> None:
        for i in range(50):
            event = NodeAsserted(node_id=f"file:w{writer}/{i}", node_type="File", name="f")
            await store.append(scope, f"writer-{writer}", [event])

    await asyncio.gather(write(0), write(1), write(2))

    assert await store.count(scope) == 150
    await assert_log_verifies(system_store, [scope.tenant_id])


async def test_writer_processes_keep_every_chain_and_the_projections_agree(
    db_url: str, runtime: Runtime, system_store: EventStore
) -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        from kg.config import Scope
        from kg.db.connect import create_pool
        from kg.events import EventStore, NodeAsserted, EdgeAsserted

        async def main(url, writer):
            pool = await create_pool(url, app_role=True, max_size=2)
            store = EventStore(pool)
            scope = Scope(f"tenant-{writer % 2}", "p")
            for i in range(40):
                events = [NodeAsserted(node_id=f"file:w{writer}/{i}", node_type="File", name="f")]
                if i:
                    events.append(EdgeAsserted(
                        edge_type="REFERENCES", from_node=f"file:w{writer}/{i}",
                        to_node=f"file:w{writer}/{i - 1}"))
                await store.append(scope, f"writer-{writer}", events)
            await pool.close()

        asyncio.run(main(sys.argv[1], int(sys.argv[2])))
        """
    )
    procs = [
        await asyncio.create_subprocess_exec(sys.executable, "-c", script, db_url, str(w))
        for w in range(6)
    ]
    for proc in procs:
        assert await asyncio.wait_for(proc.wait(), timeout=120) == 0

    assert await system_store.count() == 6 * (40 + 39)
    await assert_log_verifies(system_store, ["tenant-0", "tenant-1"])
    await runtime.runner.catch_up()
    checks = await verify_projections(runtime.system_pool, db_url, HashingEmbedder())
    assert checks and all(check.ok for check in checks), [str(c) for c in checks]
