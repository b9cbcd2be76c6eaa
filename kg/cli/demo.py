"""``kg demo``: the main job of the quick start on the embedded database."""

from __future__ import annotations

from kg.audit.verify import verify_tenant
from kg.cli import db
from kg.cli.common import console, run
from kg.context.reproduce import reproduce_context_graph
from kg.context.service import build_context_graph, parse_request
from kg.demo import seed_demo
from kg.events import EventMetadata
from kg.runtime import open_runtime


def demo() -> None:
    """Initialise, append the demo knowledge (once: reruns are idempotent), project it, build a
    policy-filtered context graph for an agent, reproduce it from the log, verify, status."""
    db.init()

    async def go() -> None:
        async with open_runtime() as rt:
            result = await seed_demo(rt)
            verb = "already present" if result.duplicate else "appended"
            console.print(
                f"demo events {verb}: positions {result.first_position}..{result.last_position}"
            )
            applied = await rt.catch_up()
            console.print(f"projections caught up ({applied} events applied)")
            request = parse_request(anchors=["component:checkout"], session_id="demo-session")
            graph = await build_context_graph(rt, request, EventMetadata(actor="kg demo"))
            console.print("\ncontext graph for an agent working on component:checkout:\n")
            console.print(graph.rendering, markup=False)
            gov = graph.governance
            console.print(
                f"{graph.context_graph_id}: excluded by policy {gov.excluded_count}, "
                f"~{graph.token_estimate} tokens"
            )
            console.print(
                f"audit context: {await reproduce_context_graph(rt, graph.context_graph_id)}"
            )
            console.print(f"audit verify: {await verify_tenant(rt.app_pool, rt.scope.tenant_id)}\n")

    run(go)
    db.status()
