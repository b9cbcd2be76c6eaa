"""Read side: kg_nodes and kg_edges with pgvector and full-text, checkpoints, embedding cache.

Every table here is derived from kg_events and can be dropped and rebuilt. Keys start with
tenant_id (the Citus distribution column on the documented scale-out path).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

DIMENSIONS = 384


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE projection_checkpoints (
            name       text        PRIMARY KEY,
            position   bigint      NOT NULL DEFAULT 0,
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE kg_embedding_index (
            id         smallint PRIMARY KEY CHECK (id = 1),
            model_id   text     NOT NULL,
            dimensions integer  NOT NULL
        );
        """
    )
    op.execute(
        f"""
        CREATE TABLE embedding_cache (
            model_id     text NOT NULL,
            content_hash text NOT NULL,
            embedding    vector({DIMENSIONS}) NOT NULL,
            PRIMARY KEY (model_id, content_hash)
        );
        CREATE TABLE kg_nodes (
            tenant_id      text        NOT NULL,
            project_id     text        NOT NULL,
            node_id        text        NOT NULL,
            node_type      text        NOT NULL,
            name           text        NOT NULL,
            properties     jsonb       NOT NULL DEFAULT '{{}}',
            content        text        NOT NULL DEFAULT '',
            labels         text[]      NOT NULL DEFAULT '{{}}',
            content_hash   text        NOT NULL,
            embedding      vector({DIMENSIONS}),
            tsv            tsvector    NOT NULL,
            created_at     timestamptz NOT NULL,
            updated_at     timestamptz NOT NULL,
            first_position bigint      NOT NULL,
            last_position  bigint      NOT NULL,
            PRIMARY KEY (tenant_id, project_id, node_id)
        );
        CREATE INDEX kg_nodes_type ON kg_nodes (tenant_id, project_id, node_type);
        -- policies are looked up per tenant (tenant-wide ones live in any project)
        CREATE INDEX kg_nodes_tenant_type ON kg_nodes (tenant_id, node_type);
        CREATE INDEX kg_nodes_updated ON kg_nodes (tenant_id, project_id, updated_at);
        CREATE INDEX kg_nodes_labels ON kg_nodes USING gin (labels);
        CREATE INDEX kg_nodes_tsv ON kg_nodes USING gin (tsv);
        CREATE INDEX kg_nodes_embedding ON kg_nodes USING hnsw (embedding vector_cosine_ops);
        CREATE TABLE kg_edges (
            tenant_id     text        NOT NULL,
            project_id    text        NOT NULL,
            edge_id       text        NOT NULL,
            edge_type     text        NOT NULL,
            from_node     text        NOT NULL,
            to_node       text        NOT NULL,
            properties    jsonb       NOT NULL DEFAULT '{{}}',
            weight        real        NOT NULL DEFAULT 1.0,
            created_at    timestamptz NOT NULL,
            updated_at    timestamptz NOT NULL,
            last_position bigint      NOT NULL,
            PRIMARY KEY (tenant_id, project_id, edge_id)
        );
        CREATE INDEX kg_edges_out ON kg_edges (tenant_id, project_id, from_node, edge_type);
        CREATE INDEX kg_edges_in ON kg_edges (tenant_id, project_id, to_node, edge_type);
        CREATE INDEX kg_edges_type ON kg_edges (tenant_id, project_id, edge_type);
        """
    )
    for table in ("kg_nodes", "kg_edges"):
        op.execute(
            f"""
            ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
            CREATE POLICY {table}_tenant ON {table} TO kg_app
                USING (tenant_id = current_setting('kg.tenant_id', true));
            GRANT SELECT ON {table} TO kg_app;
            """
        )
    op.execute(
        "GRANT SELECT ON projection_checkpoints, kg_embedding_index, embedding_cache TO kg_app"
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE IF EXISTS kg_edges, kg_nodes, embedding_cache, kg_embedding_index, "
        "projection_checkpoints"
    )
