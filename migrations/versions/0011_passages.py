"""kg_passages: vectors of the passages of long nodes, so an answer deep in a section is found.

MiniLM reads about 256 word pieces: a section's own vector (kg_nodes.embedding) sees its
heading path and first ~200 words, never what follows. A node whose content is longer than that
also gets one vector per passage (a few paragraphs, under the same heading path), written by
the kg_nodes projection in the same transaction and derived like it (drop, replay, same rows).
The vector side of search takes a node's best distance over its own vector and its passages'.

Revision ID: 0011
Revises: 0009
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE kg_passages (
            tenant_id    text    NOT NULL,
            project_id   text    NOT NULL,
            node_id      text    NOT NULL,
            ordinal      integer NOT NULL,
            node_type    text    NOT NULL,
            content_hash text    NOT NULL,
            embedding    vector(384),
            PRIMARY KEY (tenant_id, project_id, node_id, ordinal)
        );
        CREATE INDEX kg_passages_embedding ON kg_passages USING hnsw (embedding vector_cosine_ops);
        ALTER TABLE kg_passages ENABLE ROW LEVEL SECURITY;
        CREATE POLICY kg_passages_tenant ON kg_passages TO kg_app
            USING (tenant_id = current_setting('kg.tenant_id', true));
        GRANT SELECT ON kg_passages TO kg_app;
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS kg_passages")
