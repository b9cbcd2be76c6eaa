"""Context graphs and their usage, projected from ContextGraphBuilt / ContextGraphUsed.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE TABLE context_graphs (
            tenant_id        text        NOT NULL,
            project_id       text        NOT NULL,
            context_graph_id text        NOT NULL,
            mode             text        NOT NULL,
            request          jsonb       NOT NULL,
            as_of_position   bigint      NOT NULL,
            node_ids         text[]      NOT NULL,
            edge_ids         text[]      NOT NULL,
            content_hash     text        NOT NULL,
            policies_applied text[]      NOT NULL,
            excluded_count   integer     NOT NULL,
            redacted_count   integer     NOT NULL,
            session_id       text,
            task_id          text,
            actor            text        NOT NULL,
            tool_call_id     text,
            built_at         timestamptz NOT NULL,
            position         bigint      NOT NULL,
            PRIMARY KEY (tenant_id, project_id, context_graph_id)
        );
        CREATE INDEX context_graphs_nodes ON context_graphs USING gin (node_ids);
        CREATE INDEX context_graphs_session ON context_graphs (tenant_id, project_id, session_id);
        CREATE TABLE context_graph_usage (
            tenant_id        text        NOT NULL,
            project_id       text        NOT NULL,
            context_graph_id text        NOT NULL,
            tool_call_id     text        NOT NULL,
            usage_type       text        NOT NULL,
            node_ids         text[]      NOT NULL,
            actor            text        NOT NULL,
            used_at          timestamptz NOT NULL,
            position         bigint      NOT NULL,
            PRIMARY KEY (tenant_id, project_id, position)
        );
        CREATE INDEX context_graph_usage_graph
            ON context_graph_usage (tenant_id, project_id, context_graph_id);
        """
    )
    for table in ("context_graphs", "context_graph_usage"):
        op.execute(
            f"""
            ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
            CREATE POLICY {table}_tenant ON {table} TO kg_app
                USING (tenant_id = current_setting('kg.tenant_id', true));
            GRANT SELECT ON {table} TO kg_app;
            """
        )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS context_graph_usage, context_graphs")
