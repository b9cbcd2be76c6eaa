"""Edge indexes ordered by weight, covering the columns a context-graph hop reads.

A hop takes each frontier node's strongest edges (weight descending, then edge id). With the
edge list ordered that way in the index, a hub node with tens of thousands of edges costs a
few index tuples instead of a sort of all of them, and with the other columns included the
hop is an index-only scan. The same indexes still serve every lookup by endpoint.

Revision ID: 0005
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0005"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DROP INDEX kg_edges_out")
    op.execute("DROP INDEX kg_edges_in")
    op.execute(
        "CREATE INDEX kg_edges_out ON kg_edges "
        "(tenant_id, project_id, from_node, weight DESC, edge_id) INCLUDE (edge_type, to_node)"
    )
    op.execute(
        "CREATE INDEX kg_edges_in ON kg_edges "
        "(tenant_id, project_id, to_node, weight DESC, edge_id) INCLUDE (edge_type, from_node)"
    )


def downgrade() -> None:
    op.execute("DROP INDEX kg_edges_out")
    op.execute("DROP INDEX kg_edges_in")
    for name, column in (("kg_edges_out", "from_node"), ("kg_edges_in", "to_node")):
        op.execute(f"CREATE INDEX {name} ON kg_edges (tenant_id, project_id, {column}, edge_type)")
