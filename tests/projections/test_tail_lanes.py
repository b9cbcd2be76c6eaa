"""The background tail catches up in lanes: projections that read none of each other's events
apart, so a long graph backlog does not hold the context graph records (issue 34 item 5)."""

from __future__ import annotations

import asyncio

from kg.events import ContextGraphBuilt, NodeAsserted
from kg.runtime import Runtime


def test_the_lanes_part_the_graph_from_the_records(runtime: Runtime) -> None:
    assert runtime.runner.lanes() == [
        ["kg_nodes", "kg_edges"],
        ["context_graphs"],
        ["context_graph_usage"],
    ]


async def test_the_tail_projects_every_lane_to_the_head(runtime: Runtime) -> None:
    stop = asyncio.Event()
    tail = asyncio.create_task(runtime.runner.run(stop, poll_interval=0.05))
    try:
        nodes = [
            NodeAsserted(node_id=f"component:c{i}", node_type="Component", name=f"C{i}")
            for i in range(20)
        ]
        await runtime.store.append(runtime.scope, "nodes", nodes)
        built = ContextGraphBuilt(
            context_graph_id="cg_1", mode="anchor", request={}, as_of_position=20,
            node_ids=("component:c1",), edge_ids=(), content_hash="h", policies_applied=(),
            excluded_count=0, redacted_count=0, semantic_anchors=(), embedder=None,
            token_estimate=1, builder_version=1,
        )  # fmt: skip
        last = await runtime.store.append(runtime.scope, "context_graph:cg_1", [built])
        for _ in range(200):
            status = await runtime.runner.status(runtime.scope.tenant_id)
            if all(s.position == last.last_position for s in status):
                break
            await asyncio.sleep(0.05)
        assert {s.name: s.position for s in status} == dict.fromkeys(
            ["kg_nodes", "kg_edges", "context_graphs", "context_graph_usage"], last.last_position
        )
        assert not runtime.recent._windows, "what every lane applied is forgotten"
    finally:
        stop.set()
        await asyncio.wait_for(tail, 10)
