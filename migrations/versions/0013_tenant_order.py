"""Per-tenant order: each tenant's positions come from its own counter row, not a global one.

Why: every append of every tenant used to lock the single ``kg_log_head`` row, so tenants
waited on each other, and one gapless global order cannot be kept by a store sharded by tenant
(Citus). The invariants the product sells (gapless, commit-ordered positions, the hash chain,
the Merkle tree) only need to hold per tenant, which is also what a reviewer replays.

* ``kg_chain_heads`` (already one row per tenant: position and hash of its last event) becomes
  the counter: ``kg_append_lock`` and ``kg_append_events`` lock the tenant's row (creating it on
  the tenant's first append), so two tenants' appends never touch a common row. ``kg_log_head``
  is dropped.
* ``kg_events`` is keyed by ``(tenant_id, position)``; ``event_id`` is unique per tenant
  (``tenant_id`` leads every key of tenant data: the Citus distribution column).
* **History keeps its positions.** A position is part of each event's hash, of the Merkle
  tree's block index and of every ``ContextGraphBuilt``'s ``as_of_position`` (all immutable, and
  signed checkpoints held outside the database commit to them), so the events written before
  this upgrade keep their global positions: for a tenant, "events up to P" is the same set as
  before. A tenant's next position continues from its last one, and
  ``kg_chain_heads.gapless_after`` records the position after which its positions are gapless
  (0 for a tenant that never shared the log, and for every tenant of a single-tenant log).
* ``projection_checkpoints`` is keyed by ``(tenant_id, name)``: a global checkpoint ``P`` becomes,
  for each tenant, its last event at or below ``P``.
* ``kg_merkle_rebuild`` locks the tenant's head row instead of the global one.

Downgrade restores the global order when the tenants' positions do not overlap (they do not as
long as no tenant appended after the upgrade while another did); otherwise it refuses.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

GENESIS = "0" * 64

_TENANT_CHECK = """
    IF p_tenant IS DISTINCT FROM current_setting('kg.tenant_id', true) THEN
        RAISE EXCEPTION 'append for tenant % outside the transaction''s tenant scope', p_tenant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
"""

_KEYS_UP = """
ALTER TABLE kg_events DROP CONSTRAINT kg_events_pkey;
ALTER TABLE kg_events ADD CONSTRAINT kg_events_pkey PRIMARY KEY (tenant_id, position);
ALTER TABLE kg_events DROP CONSTRAINT kg_events_event_id_key;
ALTER TABLE kg_events ADD CONSTRAINT kg_events_event_id_key UNIQUE (tenant_id, event_id);
DROP INDEX kg_events_tenant_position;

ALTER TABLE kg_chain_heads ADD COLUMN gapless_after bigint NOT NULL DEFAULT 0;
UPDATE kg_chain_heads c
   SET gapless_after = coalesce(
       (SELECT max(g.position - 1) FROM (
            SELECT e.position, lag(e.position, 1, 0::bigint) OVER (ORDER BY e.position) AS prev
              FROM kg_events e WHERE e.tenant_id = c.tenant_id) g
         WHERE g.position <> g.prev + 1), 0);
DROP TABLE kg_log_head;

CREATE TABLE projection_checkpoints_by_tenant (
    tenant_id  text        NOT NULL,
    name       text        NOT NULL,
    position   bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, name)
);
INSERT INTO projection_checkpoints_by_tenant (tenant_id, name, position, updated_at)
SELECT h.tenant_id, c.name,
       coalesce((SELECT max(e.position) FROM kg_events e
                  WHERE e.tenant_id = h.tenant_id AND e.position <= c.position), 0),
       c.updated_at
  FROM kg_chain_heads h CROSS JOIN projection_checkpoints c;
DROP TABLE projection_checkpoints;
ALTER TABLE projection_checkpoints_by_tenant RENAME TO projection_checkpoints;
ALTER TABLE projection_checkpoints RENAME CONSTRAINT projection_checkpoints_by_tenant_pkey
    TO projection_checkpoints_pkey;
ALTER TABLE projection_checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY projection_checkpoints_tenant ON projection_checkpoints TO kg_app
    USING (tenant_id = current_setting('kg.tenant_id', true));
GRANT SELECT ON projection_checkpoints TO kg_app;
"""


def _functions(schema: str) -> str:
    path = f'"{schema}", pg_temp'
    return f"""
CREATE OR REPLACE FUNCTION kg_append_lock(p_tenant text, OUT head bigint, OUT chain_hash text)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
BEGIN
    {_TENANT_CHECK}
    -- The tenant's first append creates its counter row; a concurrent first append waits for
    -- this one's commit here, then finds the row.
    INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES (p_tenant, 0, '{GENESIS}')
        ON CONFLICT (tenant_id) DO NOTHING;
    -- Position and hash are one row now: FOR UPDATE returns its newest version after the wait.
    SELECT c.position, c.hash INTO head, chain_hash
      FROM kg_chain_heads c WHERE c.tenant_id = p_tenant FOR UPDATE;
END $$;

CREATE OR REPLACE FUNCTION kg_append_events(
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
    INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES (p_tenant, 0, '{GENESIS}')
        ON CONFLICT (tenant_id) DO NOTHING;
    SELECT c.position, c.hash INTO v_head, v_chain
      FROM kg_chain_heads c WHERE c.tenant_id = p_tenant FOR UPDATE;
    IF EXISTS (SELECT 1 FROM unnest(p_positions) WITH ORDINALITY AS x(p, i)
                WHERE p IS DISTINCT FROM v_head + i) THEN
        RAISE EXCEPTION 'append positions do not continue the head % of tenant %',
            v_head, p_tenant USING ERRCODE = 'serialization_failure';
    END IF;
    IF EXISTS (SELECT 1 FROM (
                   SELECT ph, lag(h, 1, v_chain) OVER (ORDER BY i) AS want
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
    UPDATE kg_chain_heads SET position = v_head + v_count, hash = p_hashes[v_count]
     WHERE tenant_id = p_tenant;
    PERFORM kg_merkle_extend(p_tenant, p_positions, p_hashes);
    PERFORM pg_notify('kg_events', (v_head + v_count)::text);
    RETURN v_head + v_count;
END $$;

CREATE OR REPLACE FUNCTION kg_merkle_rebuild(p_tenant text, p_chunk int DEFAULT 50000)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_last bigint := 0;
    v_size bigint := 0;
    v_positions bigint[];
    v_hashes text[];
BEGIN
    PERFORM 1 FROM kg_chain_heads WHERE tenant_id = p_tenant FOR UPDATE;  -- no append meanwhile
    DELETE FROM kg_merkle_nodes WHERE tenant_id = p_tenant;
    DELETE FROM kg_merkle_frontier WHERE tenant_id = p_tenant;
    LOOP
        SELECT array_agg(x.position ORDER BY x.position), array_agg(x.hash ORDER BY x.position)
          INTO v_positions, v_hashes
          FROM (SELECT k.position, k.hash FROM kg_events k
                 WHERE k.tenant_id = p_tenant AND k.position > v_last
                 ORDER BY k.tenant_id, k.position LIMIT p_chunk) x;
        EXIT WHEN v_positions IS NULL;
        v_size := kg_merkle_extend(p_tenant, v_positions, v_hashes);
        v_last := v_positions[cardinality(v_positions)];
    END LOOP;
    RETURN v_size;
END $$;
"""


_KEYS_DOWN = """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM kg_events GROUP BY position HAVING count(*) > 1) THEN
        RAISE EXCEPTION 'cannot go back to one global order: tenants hold events at the same '
            'positions (they appended independently after the upgrade to 0013)'
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
END $$;
CREATE TABLE projection_checkpoints_global (
    name       text        PRIMARY KEY,
    position   bigint      NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- A global checkpoint P is one below every tenant's first unapplied event.
INSERT INTO projection_checkpoints_global (name, position, updated_at)
SELECT c.name,
       least(coalesce(min((SELECT min(e.position) - 1 FROM kg_events e
                            WHERE e.tenant_id = c.tenant_id AND e.position > c.position)),
                      (SELECT max(position) FROM kg_events), 0),
             coalesce((SELECT max(position) FROM kg_events), 0)),
       max(c.updated_at)
  FROM projection_checkpoints c GROUP BY c.name;
DROP TABLE projection_checkpoints;
ALTER TABLE projection_checkpoints_global RENAME TO projection_checkpoints;
ALTER TABLE projection_checkpoints RENAME CONSTRAINT projection_checkpoints_global_pkey
    TO projection_checkpoints_pkey;
GRANT SELECT ON projection_checkpoints TO kg_app;

CREATE TABLE kg_log_head (
    id       smallint PRIMARY KEY CHECK (id = 1),
    position bigint   NOT NULL
);
INSERT INTO kg_log_head SELECT 1, coalesce(max(position), 0) FROM kg_events;
GRANT SELECT ON kg_log_head TO kg_app;
ALTER TABLE kg_chain_heads DROP COLUMN gapless_after;

CREATE INDEX kg_events_tenant_position ON kg_events (tenant_id, position);
ALTER TABLE kg_events DROP CONSTRAINT kg_events_event_id_key;
ALTER TABLE kg_events ADD CONSTRAINT kg_events_event_id_key UNIQUE (event_id);
ALTER TABLE kg_events DROP CONSTRAINT kg_events_pkey;
ALTER TABLE kg_events ADD CONSTRAINT kg_events_pkey PRIMARY KEY (position);
"""


def _previous_functions(schema: str) -> str:
    """The append functions as migrations 0009 and 0012 left them (global counter)."""
    import importlib

    m9 = importlib.import_module("migrations.versions.0009_append_functions")
    m12 = importlib.import_module("migrations.versions.0012_merkle_tree")
    lock = m9._functions(schema).split("CREATE FUNCTION kg_append_events")[0]
    lock = lock.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    rebuild = m12._extend(schema).split("CREATE FUNCTION kg_merkle_rebuild")[1]
    rebuild = "CREATE OR REPLACE FUNCTION kg_merkle_rebuild" + rebuild.split("REVOKE ALL")[0]
    return lock + m12._append(schema, m12._APPEND_WITH_TREE) + rebuild


def upgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_KEYS_UP)
    op.execute(_functions(schema))


def downgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_KEYS_DOWN)
    op.execute(_previous_functions(schema))
