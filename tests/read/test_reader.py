"""The read model's one owner, ``rt.reader()``: catch-up, log head, tenant snapshot, policy."""

from __future__ import annotations

import asyncpg
import pytest

from kg.config import Scope
from kg.errors import NotFoundError, PolicyDeniedError
from kg.events import NodeAsserted
from kg.policies.model import REDACTED_NAME
from kg.runtime import Runtime


def node(node_id: str, name: str) -> NodeAsserted:
    return NodeAsserted(node_id=node_id, node_type="Component", name=name, content=f"{name}.")


async def test_one_reader_per_runtime_and_its_head_is_the_stores(runtime: Runtime) -> None:
    reader = runtime.reader()
    assert runtime.reader() is reader
    tenant = runtime.scope.tenant_id
    assert await reader.head() == await runtime.system_store.head(tenant) == 0
    appended = await runtime.store.append(runtime.scope, "s", [node("component:a", "Alpha")])
    assert await reader.head() == await runtime.system_store.head(tenant) == appended.last_position
    # The head is the tenant's own: another tenant's appends do not move it.
    await runtime.store.append(Scope("other", "p"), "s", [node("component:x", "X")])
    assert await reader.head() == appended.last_position


async def test_a_snapshot_catches_up_first_and_sees_one_state(runtime: Runtime) -> None:
    await runtime.store.append(runtime.scope, "s", [node("component:a", "Alpha")])
    async with runtime.reader().snapshot() as snap:  # no explicit catch_up: the reader's own
        governed = await snap.governed()
        assert [n.visible.name for n in await governed.nodes(["component:a"])] == ["Alpha"]
        # An event appended and projected during the snapshot is not seen inside it.
        await runtime.store.append(runtime.scope, "t", [node("component:b", "Beta")])
        await runtime.catch_up()
        assert await governed.nodes(["component:b"]) == []
    async with runtime.reader().snapshot(catch_up=False) as snap:
        assert len(await (await snap.governed()).nodes(["component:b"])) == 1


async def test_a_snapshot_is_read_only_and_scoped_to_the_tenant(
    runtime: Runtime, app_pool: asyncpg.Pool
) -> None:
    other = Scope("globex", "webshop")
    await runtime.store.append(other, "s", [node("component:theirs", "Theirs")])
    await runtime.store.append(runtime.scope, "s", [node("component:ours", "Ours")])
    async with runtime.reader().snapshot() as snap:
        governed = await snap.governed()
        found = await governed.nodes(["component:theirs", "component:ours"])
        assert [n.node_id for n in found] == ["component:ours"]
        assert await snap.records.existing(["component:theirs", "component:ours"]) == {
            "component:ours"
        }
        # Even SQL without a tenant filter sees only this tenant's rows (row-level security).
        rows = await snap.conn.fetch("SELECT node_id FROM kg_nodes ORDER BY 1")
        assert [r["node_id"] for r in rows] == ["component:ours"]
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await snap.conn.execute("DELETE FROM kg_nodes")


async def test_nodes_come_out_only_through_the_policies(shop: Runtime) -> None:
    async with shop.reader().snapshot() as snap:
        governed = await snap.governed()
        found = await governed.nodes(["component:vault", "document:card-data", "adr:0007"])
        assert {n.node_id for n in found} == {"document:card-data", "adr:0007"}
        assert governed.excluded == 1 and governed.withheld == {"component:vault"}
        card = next(n for n in found if n.node_id == "document:card-data")
        view = card.view()
        assert (view.name, view.content, view.labels, view.redacted) == (
            REDACTED_NAME, "", [], True,
        )  # fmt: skip
        near = await governed.neighbours(["component:payments"], exclude=[], limit=10)
        assert "component:vault" not in {n.node_id for _, n in near}
        assert governed.excluded == 1, "a node is decided (and counted) once per query"
        with pytest.raises(PolicyDeniedError) as denied:
            await governed.start("component:vault")
        assert "VAULT-SECRET" not in str(denied.value)
        with pytest.raises(NotFoundError, match="component:nope"):
            await governed.start("component:nope")
        # Each query has its own tally.
        assert (await snap.governed()).excluded == 0
