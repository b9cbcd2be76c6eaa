"""A partial index on SUPERSEDES edges, for the successors of each node a read returns.

Every node a context build or graph query returns carries the nodes that supersede it (its
incoming SUPERSEDES edges: a later decision, a replacing spec), one lookup per node. Through
the general incoming-edge index a lookup walked all of the node's incoming edges and filtered
them by type: a hub with 7,000 incoming edges cost 2 ms, and a semantic build's first hop at
100,000 nodes spent 133 of its 135 ms there (``EXPLAIN ANALYZE``, bench/RESULTS.md issue 31
session 13). This index holds only SUPERSEDES edges, so a lookup reads the few it needs, as
0008 did for GOVERNED_BY.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "CREATE INDEX kg_edges_supersedes ON kg_edges (tenant_id, project_id, to_node, from_node) "
        "WHERE edge_type = 'SUPERSEDES'"
    )


def downgrade() -> None:
    op.execute("DROP INDEX kg_edges_supersedes")
