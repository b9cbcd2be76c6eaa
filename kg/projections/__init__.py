"""The read side: one module per projected table, and the runner that keeps them current."""

from kg.projections.base import Projection, ProjectionContext
from kg.projections.context_graph_usage import ContextGraphUsageProjection
from kg.projections.context_graphs import ContextGraphsProjection
from kg.projections.edges import EdgesProjection
from kg.projections.nodes import NodesProjection
from kg.projections.runner import ProjectionRunner, ProjectionStatus


def default_projections() -> list[Projection]:
    return [
        NodesProjection(),
        EdgesProjection(),
        ContextGraphsProjection(),
        ContextGraphUsageProjection(),
    ]


__all__ = [
    "EdgesProjection",
    "NodesProjection",
    "Projection",
    "ProjectionContext",
    "ProjectionRunner",
    "ProjectionStatus",
    "default_projections",
]
