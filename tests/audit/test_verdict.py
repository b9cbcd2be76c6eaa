"""``kg audit verify``'s verdict is decided in ``kg.audit``: every check must hold."""

from __future__ import annotations

from kg.audit.verdict import audit
from kg.config import Scope
from kg.events import NodeAsserted
from kg.runtime import Runtime


async def test_the_verdict_holds_only_while_every_check_holds(
    runtime: Runtime, scope: Scope
) -> None:
    events = [NodeAsserted(node_id=f"file:{i}", node_type="File", name="f") for i in range(3)]
    await runtime.store.append(scope, "s", events)

    clean = await audit(runtime, projections=True)
    assert clean.ok and clean.projections and all(ok for ok, _ in clean.lines())

    async with runtime.system_pool.acquire() as conn:
        await conn.execute("ALTER TABLE kg_events DISABLE TRIGGER kg_events_no_update_delete")
        await conn.execute("UPDATE kg_nodes SET name = 'forged' WHERE node_id = 'file:1'")
        await conn.execute("DELETE FROM kg_events WHERE position = 3")

    broken = await audit(runtime, projections=True)
    assert not broken.ok
    failing = [line for ok, line in broken.lines() if not ok]
    assert any("BROKEN" in line for line in failing)
    assert any("kg_nodes: DIFFERS" in line for line in failing)
