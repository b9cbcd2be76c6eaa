"""Appends go through two SECURITY DEFINER functions; the application role logs in as itself.

Why:

* **The chain forked under concurrent writers.** The append used to lock ``kg_log_head`` and
  read the tenant's ``kg_chain_heads`` row in one statement. Under READ COMMITTED a writer that
  waited for the lock got the re-read head row, but the chain head came from the statement's
  snapshot taken before the wait, so it linked to the previous head. ``kg_append_lock`` takes
  the lock and then reads the chain head in a statement of its own (a new snapshot, after the
  lock was granted), and ``kg_append_events`` refuses a batch whose positions or ``prev_hash``
  links do not continue the heads it holds locked: a fork cannot be written, whatever the
  caller computed.
* **Defence in depth for tenancy.** ``kg_app`` no longer holds INSERT on ``kg_events`` or
  UPDATE on the heads: the functions are its only way to append, and each refuses a tenant other
  than the one the transaction is scoped to. ``kg_app`` becomes a LOGIN role without
  superuser rights, so the application pool can log in as it instead of ``SET ROLE``-ing from
  a superuser session (where one ``SET ROLE postgres`` undid the restriction). The global
  ``embedding_cache`` is no longer readable by it (its keys told whether any tenant held a
  given text).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

GENESIS = "0" * 64

_TENANT_CHECK = """
    IF p_tenant IS DISTINCT FROM current_setting('kg.tenant_id', true) THEN
        RAISE EXCEPTION 'append for tenant % outside the transaction''s tenant scope', p_tenant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
"""


def _functions(schema: str) -> str:
    path = f'"{schema}", pg_temp'
    return f"""
CREATE FUNCTION kg_append_lock(p_tenant text, OUT head bigint, OUT chain_hash text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    {_TENANT_CHECK}
    SELECT h.position INTO head FROM kg_log_head h WHERE h.id = 1 FOR UPDATE;
    -- A statement of its own: its snapshot is taken after the lock was granted, so it sees
    -- the chain head the previous append committed.
    SELECT c.hash INTO chain_hash FROM kg_chain_heads c WHERE c.tenant_id = p_tenant;
END $$;

CREATE FUNCTION kg_append_events(
    p_tenant text, p_project text, p_recorded_at timestamptz, p_idempotency_key text,
    p_positions bigint[], p_event_ids uuid[], p_stream_ids text[], p_versions int[],
    p_types text[], p_schema_versions int[], p_payloads text[], p_metadata text[],
    p_prev_hashes text[], p_hashes text[]
) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_head bigint;
    v_chain text;
    v_count int := coalesce(cardinality(p_positions), 0);
BEGIN
    {_TENANT_CHECK}
    IF v_count = 0 THEN
        RAISE EXCEPTION 'append has no events' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT h.position INTO v_head FROM kg_log_head h WHERE h.id = 1 FOR UPDATE;
    SELECT c.hash INTO v_chain FROM kg_chain_heads c WHERE c.tenant_id = p_tenant;
    IF EXISTS (SELECT 1 FROM unnest(p_positions) WITH ORDINALITY AS x(p, i)
                WHERE p IS DISTINCT FROM v_head + i) THEN
        RAISE EXCEPTION 'append positions do not continue the log head %', v_head
            USING ERRCODE = 'serialization_failure';
    END IF;
    IF EXISTS (SELECT 1 FROM (
                   SELECT ph, lag(h, 1, coalesce(v_chain, '{GENESIS}')) OVER (ORDER BY i) AS want
                     FROM unnest(p_prev_hashes, p_hashes) WITH ORDINALITY AS x(ph, h, i)) l
                WHERE ph IS DISTINCT FROM want) THEN
        RAISE EXCEPTION 'append does not link to the chain head of tenant %', p_tenant
            USING ERRCODE = 'serialization_failure';
    END IF;
    INSERT INTO kg_events (position, event_id, tenant_id, project_id, stream_id,
                           stream_version, event_type, schema_version, payload, metadata,
                           recorded_at, idempotency_key, prev_hash, hash)
    SELECT p, e, p_tenant, p_project, sid, v, t, s, pl::jsonb, md::jsonb, p_recorded_at,
           p_idempotency_key, ph, h
      FROM unnest(p_positions, p_event_ids, p_stream_ids, p_versions, p_types,
                  p_schema_versions, p_payloads, p_metadata, p_prev_hashes, p_hashes)
           AS x(p, e, sid, v, t, s, pl, md, ph, h);
    UPDATE kg_log_head SET position = v_head + v_count WHERE id = 1;
    INSERT INTO kg_chain_heads (tenant_id, position, hash)
    VALUES (p_tenant, v_head + v_count, p_hashes[v_count])
    ON CONFLICT (tenant_id) DO UPDATE SET position = excluded.position, hash = excluded.hash;
    PERFORM pg_notify('kg_events', (v_head + v_count)::text);
    RETURN v_head + v_count;
END $$;

REVOKE ALL ON FUNCTION kg_append_lock(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION kg_append_events(text, text, timestamptz, text, bigint[], uuid[],
    text[], int[], text[], int[], text[], text[], text[], text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION kg_append_lock(text) TO kg_app;
GRANT EXECUTE ON FUNCTION kg_append_events(text, text, timestamptz, text, bigint[], uuid[],
    text[], int[], text[], int[], text[], text[], text[], text[]) TO kg_app;
"""


def upgrade() -> None:
    schema = op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one()
    op.execute(_functions(str(schema)))
    op.execute(
        """
        REVOKE INSERT ON kg_events FROM kg_app;
        REVOKE UPDATE ON kg_log_head FROM kg_app;
        REVOKE INSERT, UPDATE ON kg_chain_heads FROM kg_app;
        REVOKE SELECT ON embedding_cache FROM kg_app;
        ALTER ROLE kg_app LOGIN;
        """
    )


def downgrade() -> None:
    op.execute(
        """
        DROP FUNCTION IF EXISTS kg_append_events(text, text, timestamptz, text, bigint[], uuid[],
            text[], int[], text[], int[], text[], text[], text[], text[]);
        DROP FUNCTION IF EXISTS kg_append_lock(text);
        GRANT INSERT ON kg_events TO kg_app;
        GRANT UPDATE ON kg_log_head TO kg_app;
        GRANT INSERT, UPDATE ON kg_chain_heads TO kg_app;
        GRANT SELECT ON embedding_cache TO kg_app;
        """
    )
    # The role stays LOGIN: roles belong to the whole server, and other databases on it may be
    # at this revision.
