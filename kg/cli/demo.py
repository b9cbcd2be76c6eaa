"""``kg demo``: the main job of the quick start on the embedded database."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kg.cli import db
from kg.cli.common import console, run

if TYPE_CHECKING:
    from kg.runtime import Runtime


def demo() -> None:
    """Initialise, append the demo knowledge (once: reruns are idempotent), project it, build a
    policy-filtered context graph for an agent, reproduce it from the log, verify, status."""
    from kg.audit.verify import verify_tenant
    from kg.context.reproduce import reproduce_context_graph
    from kg.context.service import build_context_graph, parse_request
    from kg.demo import seed_demo
    from kg.events import EventMetadata
    from kg.host.database import open_runtime

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
            await _examples(rt)
            await _api_example(rt)

    run(go)
    db.status()


async def _examples(rt: Runtime) -> None:
    """Ingest the example specs (only what changed since the last demo), lint them (one link
    is broken on purpose) and show one epic's dependency tree."""
    from kg.cli.inspect_node import build_tree
    from kg.events import EventMetadata
    from kg.governance.enforce import check, cli_actor
    from kg.governance.explain import explain_node
    from kg.governance.sync import apply_policy_files
    from kg.graph_queries import get_entity_neighbors
    from kg.ingest.examples import EXAMPLES_SCOPE, examples_root
    from kg.ingest.service import ingest_paths, lint_project

    root = examples_root()
    if root is None:
        console.print("example project not found next to the kg package: skipped\n")
        return
    ex = rt.in_scope(EXAMPLES_SCOPE, root)
    policies = await apply_policy_files(ex, EventMetadata(actor="kg demo"))
    report = await ingest_paths(ex, [root], actor="kg demo", acting=cli_actor())
    scope = f"tenant {EXAMPLES_SCOPE.tenant_id}, project {EXAMPLES_SCOPE.project_id}"
    console.print(f"example specs ({root}, {scope}):", markup=False)
    console.print(f"{policies.summary()} (examples/.kg/policies/)", markup=False)
    console.print(f"ingested {report.summary()}", markup=False)
    adr = "document:docs/adr/0001-event-sourcing.md"
    console.print(f"\nkg policy explain {adr}:", markup=False)
    explained = await explain_node(ex, adr)
    for a in explained.applied:
        console.print(
            f"  {a.policy_id} [{a.effect}] via {a.how}: allows {', '.join(a.actions)} to "
            f"{', '.join(a.actors)} (since position {a.since}, from {a.origin})",
            markup=False,
        )
    refusal = await check(ex, "mcp:claude", "record_decision", [adr])
    if refusal is not None:
        console.print(f"  an agent trying it: {refusal.message()}", markup=False)
    console.print("\nkg lint of the example specs (one link is broken on purpose):")
    for problem in await lint_project(root):
        console.print(f"  {problem}", markup=False)
    epic = "document:docs/epics/spec-ingestion.md"
    result = await get_entity_neighbors(ex, epic, direction="out", depth=2)
    console.print(f"\nkg inspect {epic} (in the examples' scope):")
    console.print(build_tree(result))
    console.print(
        f"try: KG_TENANT={EXAMPLES_SCOPE.tenant_id} KG_PROJECT={EXAMPLES_SCOPE.project_id} "
        f"kg inspect {epic}\n",
        markup=False,
    )
    await _rules(ex)


async def _rules(ex: Runtime) -> None:
    """The example project's rules (AGENTS.md, .cursor/rules, docs/rules) for one task."""
    from kg.events import EventMetadata
    from kg.rules.service import query_directives

    task, path = "add a column to the events table", "migrations/versions/0013_add_column.py"
    served = await query_directives(
        ex, task=task, paths=[path], metadata=EventMetadata(actor="kg demo")
    )
    console.print(f"kg rules query --task {task!r} --path {path}:\n", markup=False)
    console.print(served.checklist, markup=False)


async def _api_example(rt: Runtime) -> None:
    """Ingest the API example (its schema map switches entity extraction on) and show the
    chain a renewal follows: Subscription -> Invoice -> Charge -> event, found by name."""
    from kg.cli.inspect_node import build_tree
    from kg.graph_queries import get_entity_neighbors
    from kg.ingest.examples import API_SCOPE, api_example_root
    from kg.ingest.service import ingest_paths

    root = api_example_root()
    if root is None:
        return
    ex = rt.in_scope(API_SCOPE, root)
    report = await ingest_paths(ex, [root / "docs"], actor="kg demo")
    console.print(f"API example ({root}): ingested {report.summary()}", markup=False)
    chain = await get_entity_neighbors(
        ex, "Subscription", edge_types=CHAIN_EDGES, depth=3, direction="out"
    )
    console.print("\nentity chain from the name 'Subscription' (extracted from the prose):")
    console.print(build_tree(chain))
    console.print(
        f"try: KG_TENANT={API_SCOPE.tenant_id} KG_PROJECT={API_SCOPE.project_id} "
        "kg inspect apiobject:subscription\n",
        markup=False,
    )


CHAIN_EDGES = ("GENERATES", "REQUIRES", "TRIGGERS", "RETURNS", "BELONGS_TO")
