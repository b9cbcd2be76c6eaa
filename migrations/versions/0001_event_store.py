"""Event store: append-only, hash-chained kg_events with gapless commit-ordered positions.

Positions come from the single-row counter ``kg_log_head``: an append locks that row for the rest
of its transaction, so positions are handed out in commit order and a rolled-back append gives
its numbers back. A reader that has seen position N can never later find a committed event below
N. Appends are serialised by this lock; batching keeps the cost low (see bench/RESULTS.md).

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kg_app') THEN
                CREATE ROLE kg_app NOLOGIN;
            END IF;
        END $$;
        """
    )
    op.execute("GRANT kg_app TO CURRENT_USER")
    op.execute(
        """
        CREATE TABLE kg_events (
            position        bigint      NOT NULL PRIMARY KEY,
            event_id        uuid        NOT NULL UNIQUE,
            tenant_id       text        NOT NULL,
            project_id      text        NOT NULL,
            stream_id       text        NOT NULL,
            stream_version  integer     NOT NULL CHECK (stream_version > 0),
            event_type      text        NOT NULL,
            schema_version  integer     NOT NULL CHECK (schema_version > 0),
            payload         jsonb       NOT NULL,
            metadata        jsonb       NOT NULL,
            recorded_at     timestamptz NOT NULL,
            idempotency_key text,
            prev_hash       text        NOT NULL,
            hash            text        NOT NULL,
            CONSTRAINT kg_events_stream_version_key
                UNIQUE (tenant_id, project_id, stream_id, stream_version)
        )
        """
    )
    op.execute("CREATE INDEX kg_events_tenant_position ON kg_events (tenant_id, position)")
    op.execute(
        "CREATE INDEX kg_events_idempotency ON kg_events (tenant_id, project_id, idempotency_key) "
        "WHERE idempotency_key IS NOT NULL"
    )
    op.execute("CREATE INDEX kg_events_type ON kg_events (tenant_id, event_type, position)")
    op.execute(
        """
        CREATE TABLE kg_log_head (
            id       smallint PRIMARY KEY CHECK (id = 1),
            position bigint   NOT NULL
        );
        INSERT INTO kg_log_head VALUES (1, 0);
        CREATE TABLE kg_chain_heads (
            tenant_id text   PRIMARY KEY,
            position  bigint NOT NULL,
            hash      text   NOT NULL
        );
        """
    )
    op.execute(
        """
        CREATE FUNCTION kg_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'kg_events is append-only: % is not allowed; '
                'append a correcting event instead', TG_OP
                USING ERRCODE = 'insufficient_privilege';
        END $$;
        CREATE TRIGGER kg_events_no_update_delete BEFORE UPDATE OR DELETE ON kg_events
            FOR EACH ROW EXECUTE FUNCTION kg_events_append_only();
        CREATE TRIGGER kg_events_no_truncate BEFORE TRUNCATE ON kg_events
            FOR EACH STATEMENT EXECUTE FUNCTION kg_events_append_only();
        """
    )
    op.execute(
        """
        ALTER TABLE kg_events ENABLE ROW LEVEL SECURITY;
        CREATE POLICY kg_events_tenant ON kg_events TO kg_app
            USING (tenant_id = current_setting('kg.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('kg.tenant_id', true));
        ALTER TABLE kg_chain_heads ENABLE ROW LEVEL SECURITY;
        CREATE POLICY kg_chain_heads_tenant ON kg_chain_heads TO kg_app
            USING (tenant_id = current_setting('kg.tenant_id', true))
            WITH CHECK (tenant_id = current_setting('kg.tenant_id', true));
        GRANT SELECT, INSERT ON kg_events TO kg_app;
        GRANT SELECT, UPDATE ON kg_log_head TO kg_app;
        GRANT SELECT, INSERT, UPDATE ON kg_chain_heads TO kg_app;
        """
    )


def downgrade() -> None:
    op.execute("DROP TABLE IF EXISTS kg_chain_heads, kg_log_head, kg_events")
    op.execute("DROP FUNCTION IF EXISTS kg_events_append_only()")
    op.execute(
        """
        DO $$
        BEGIN
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kg_app') THEN
                EXECUTE format('REVOKE ALL ON SCHEMA %I FROM kg_app', current_schema());
            END IF;
        END $$;
        """
    )
