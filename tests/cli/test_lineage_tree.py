"""``kg lineage --direction both`` draws the downstream steps in its tree, as ``--json`` has
them: later context graphs that showed the decision, and the decisions they informed or that
supersede it."""

from __future__ import annotations

from rich.console import Console

from kg.cli.decisions import _tree
from kg.context import service
from kg.decisions import record_decision
from kg.events import EventMetadata
from kg.lineage import trace_decision_lineage
from kg.runtime import Runtime

META = EventMetadata(actor="pytest")


def text_of(tree: object) -> str:
    console = Console(record=True, width=300)
    console.print(tree)
    return console.export_text()


async def test_the_tree_shows_downstream_steps(shop: Runtime) -> None:
    first_graph = await service.build_context_graph(
        shop, service.parse_request(anchors=("adr:0007",), mode="anchor"), META
    )
    first = await record_decision(
        shop, text="Use the gateway", context_graph_ids=(first_graph.context_graph_id,),
        metadata=META,
    )  # fmt: skip
    later_graph = await service.build_context_graph(
        shop, service.parse_request(anchors=(first.node_id,), mode="anchor"), META
    )
    later = await record_decision(
        shop, text="Retry the gateway", context_graph_ids=(later_graph.context_graph_id,),
        metadata=META,
    )  # fmt: skip
    replacement = await record_decision(
        shop, text="Use the new gateway", supersedes=(first.node_id,), metadata=META
    )

    lineage = await trace_decision_lineage(shop, first.node_id, "both", 3)
    drawn = text_of(_tree(lineage))

    assert f"context_graph:{first_graph.context_graph_id}" in drawn  # upstream
    assert f"SHOWN_IN context_graph:{later_graph.context_graph_id}" in drawn
    assert f"INFORMED {later.node_id}" in drawn
    # Linked to the decision only by its own SUPERSEDES edge: drawn the other way round.
    assert f"SUPERSEDED_BY {replacement.node_id}" in drawn
    shown = {s["id"] for s in lineage.to_dict()["steps"]}
    assert {later.node_id, replacement.node_id} <= shown


async def test_the_tree_shows_the_directives_a_decision_followed(runtime: Runtime) -> None:
    """Issue 30 item 9: a decision recorded with a served directive listed it in informed_by
    and in the JSON, but no edge led to it, so the tree left it out."""
    from kg.ingest.service import ingest_paths
    from kg.rules.service import query_directives
    from tests.rules.test_query_directives import copy_examples

    copy_examples(runtime.settings.project_root)
    await ingest_paths(runtime, None)
    served = await query_directives(
        runtime, task="add a column to the events table", paths=["migrations/versions/0013_x.py"]
    )
    followed = [d["node_id"] for d in served.directives]
    assert followed, "the task is served its migration rules"
    decision = await record_decision(
        runtime, text="Add the column in a migration", context_graph_ids=(served.served_id,),
        metadata=META,
    )  # fmt: skip

    lineage = await trace_decision_lineage(runtime, decision.node_id, "upstream", 3)
    drawn = text_of(_tree(lineage))
    for node_id in followed:
        assert f"FOLLOWED {node_id}" in drawn, drawn
