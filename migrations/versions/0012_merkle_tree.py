"""A Merkle tree over each tenant's log (RFC 9162), maintained by the append function.

Why: the hash chain finds an edited event, but a superuser who rewrites an event can recompute
every later hash and the chain heads, and the chain verifies again. Signed checkpoints of a
Merkle tree root, kept outside the database, catch that (a consistency proof from the held
checkpoint to today's tree fails), and an event's inclusion in the log is proved with
O(log n) hashes instead of the whole log.

* ``kg_merkle_nodes``: the perfect subtrees of level 4 and up of every tenant's tree,
  ``(level, idx)`` covering the tenant's leaves ``[idx * 2^level, (idx + 1) * 2^level)``. Leaf
  ``i`` is the tenant's ``i``-th event in position order (its own sequence, not the global
  position); its hash is ``sha256(0x00 || decode(kg_events.hash, 'hex'))``: the leaf data is the
  event's 32-byte chain hash, which commits to the event's canonical JSON. Levels 0-3 are not
  stored: a reader recomputes them from the 16 events of a block (storing them made a
  1,000-event append write 2,000 rows and cost a third of its throughput; this way it writes
  about 125). ``position`` is the log position of the event that completed the subtree, so the
  tree as of a past position is the rows with ``position <= P``, and the level-4 rows map
  positions to blocks of leaves. A completed subtree never changes.
* ``kg_merkle_frontier``: each tenant's size and compact range (the roots of the perfect
  subtrees of the set bits of the size, ``border[level + 1]``): what an append extends.
* ``kg_merkle_log``: this log's random id, part of every checkpoint's origin, so a checkpoint
  or a proof of another database is refused.

``kg_merkle_extend`` (SECURITY DEFINER, no grant: only ``kg_append_events`` and the owner call
it) adds a batch of leaves set-based, one statement per tree level the batch touches (amortised
two for a one-event append), so the append keeps its four round trips. ``kg_merkle_rebuild``
(owner only) builds a tenant's tree from its events: the backfill of existing logs below.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

GENESIS = "0" * 64

_TENANT_CHECK = """
    IF p_tenant IS DISTINCT FROM current_setting('kg.tenant_id', true) THEN
        RAISE EXCEPTION 'append for tenant % outside the transaction''s tenant scope', p_tenant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
"""

_TABLES = """
CREATE TABLE kg_merkle_nodes (
    tenant_id text     NOT NULL,
    level     smallint NOT NULL,
    idx       bigint   NOT NULL,
    hash      bytea    NOT NULL,
    position  bigint   NOT NULL,
    PRIMARY KEY (tenant_id, level, idx)
);
CREATE UNIQUE INDEX kg_merkle_block_position ON kg_merkle_nodes (tenant_id, position)
    WHERE level = 4;
CREATE TABLE kg_merkle_frontier (
    tenant_id text    PRIMARY KEY,
    size      bigint  NOT NULL,
    border    bytea[] NOT NULL
);
CREATE TABLE kg_merkle_log (
    id     smallint PRIMARY KEY CHECK (id = 1),
    log_id uuid     NOT NULL DEFAULT gen_random_uuid()
);
INSERT INTO kg_merkle_log (id) VALUES (1);
ALTER TABLE kg_merkle_nodes ENABLE ROW LEVEL SECURITY;
CREATE POLICY kg_merkle_nodes_tenant ON kg_merkle_nodes TO kg_app
    USING (tenant_id = current_setting('kg.tenant_id', true));
ALTER TABLE kg_merkle_frontier ENABLE ROW LEVEL SECURITY;
CREATE POLICY kg_merkle_frontier_tenant ON kg_merkle_frontier TO kg_app
    USING (tenant_id = current_setting('kg.tenant_id', true));
GRANT SELECT ON kg_merkle_nodes, kg_merkle_frontier, kg_merkle_log TO kg_app;
"""


def _extend(schema: str) -> str:
    path = f'"{schema}", pg_temp'
    return f"""
CREATE FUNCTION kg_merkle_extend(p_tenant text, p_positions bigint[], p_hashes text[])
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_count int := coalesce(cardinality(p_hashes), 0);
    s bigint;          -- the tree's size before the batch
    e bigint;          -- and after
    b bytea[];         -- the compact range: b[lv + 1] is the border subtree of level lv
    a bytea[];         -- the new nodes of level lv, indices lo, lo + 1, ...
    lo bigint;
    lv int := 0;
    n_level smallint[];
    n_idx bigint[];
    n_hash bytea[];
    n_pos bigint[];
    v_h bytea;
    v_i bigint;
    v_k int;
BEGIN
    IF v_count = 0 THEN
        RETURN NULL;
    END IF;
    -- No row lock: every caller holds the kg_log_head lock, which serialises appends.
    SELECT f.size, f.border INTO s, b FROM kg_merkle_frontier f WHERE f.tenant_id = p_tenant;
    IF NOT FOUND THEN
        s := 0;
        b := '{{}}';
    END IF;
    e := s + v_count;
    lo := s;
    n_level := '{{}}';
    n_idx := '{{}}';
    n_hash := '{{}}';
    n_pos := '{{}}';
    IF v_count <= 32 THEN
        -- A small append (the common case: an agent's event or two): leaf by leaf, in plain
        -- plpgsql expressions, which skip the per-statement cost of a query.
        FOR v_k IN 1 .. v_count LOOP
            v_h := sha256('\\x00'::bytea || decode(p_hashes[v_k], 'hex'));
            v_i := s + v_k - 1;
            lv := 0;
            WHILE v_i & 1 = 1 LOOP
                v_h := sha256('\\x01'::bytea || b[lv + 1] || v_h);
                IF v_h IS NULL THEN
                    RAISE EXCEPTION 'the Merkle frontier of tenant % is corrupt at level %',
                        p_tenant, lv USING ERRCODE = 'data_corrupted';
                END IF;
                b[lv + 1] := NULL;
                lv := lv + 1;
                v_i := v_i >> 1;
                IF lv >= 4 THEN
                    n_level := n_level || lv::smallint;
                    n_idx := n_idx || v_i;
                    n_hash := n_hash || v_h;
                    n_pos := n_pos || p_positions[v_k];
                END IF;
            END LOOP;
            b[lv + 1] := v_h;
        END LOOP;
    ELSE
        SELECT array_agg(sha256('\\x00'::bytea || decode(h, 'hex')) ORDER BY o) INTO a
          FROM unnest(p_hashes) WITH ORDINALITY AS x(h, o);
        LOOP
            IF lo & 1 = 1 THEN
                -- The first new node is a right child: its left sibling is the old border node.
                IF b[lv + 1] IS NULL THEN
                    RAISE EXCEPTION 'the Merkle frontier of tenant % is corrupt at level %',
                        p_tenant, lv USING ERRCODE = 'data_corrupted';
                END IF;
                a := array_prepend(b[lv + 1], a);
                lo := lo - 1;
            END IF;
            b[lv + 1] := CASE WHEN (e >> lv) & 1 = 1 THEN a[cardinality(a)] END;
            EXIT WHEN cardinality(a) < 2;
            -- Pairs (1, 2), (3, 4), ...: unnest and lag, since subscripting an array of bytea
            -- walks it from the start (quadratic for a large batch).
            a := ARRAY(SELECT z.h FROM (
                         SELECT u.o,
                                sha256('\\x01'::bytea || lag(u.x) OVER (ORDER BY u.o) || u.x) AS h
                           FROM unnest(a) WITH ORDINALITY AS u(x, o)) z
                        WHERE z.o % 2 = 0 ORDER BY z.o);
            lv := lv + 1;
            lo := lo / 2;
            CONTINUE WHEN lv < 4;  -- levels 0-3 are recomputed from the events when needed
            n_level := n_level || array_fill(lv::smallint, ARRAY[cardinality(a)]);
            n_idx := n_idx || ARRAY(SELECT lo + j
                                      FROM generate_series(0, cardinality(a) - 1) AS j ORDER BY j);
            n_hash := n_hash || a;
            -- The event completing node (lv, i) is leaf (i + 1) * 2^lv - 1.
            -- (bigint[] has fixed-width elements: a subscript is a direct access)
            n_pos := n_pos || ARRAY(SELECT p_positions[((lo + j + 1) << lv) - s]
                                      FROM generate_series(0, cardinality(a) - 1) AS j
                                     ORDER BY j);
        END LOOP;
    END IF;
    IF cardinality(n_idx) > 0 THEN
        INSERT INTO kg_merkle_nodes (tenant_id, level, idx, hash, position)
        SELECT p_tenant, x.l, x.i, x.h, x.p
          FROM unnest(n_level, n_idx, n_hash, n_pos) AS x(l, i, h, p);
    END IF;
    IF s > 0 THEN  -- (cheaper than an upsert's speculative insertion)
        UPDATE kg_merkle_frontier SET size = e, border = b WHERE tenant_id = p_tenant;
    ELSE
        INSERT INTO kg_merkle_frontier (tenant_id, size, border) VALUES (p_tenant, e, b);
    END IF;
    RETURN e;
END $$;

CREATE FUNCTION kg_merkle_rebuild(p_tenant text, p_chunk int DEFAULT 50000) RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_last bigint := 0;
    v_size bigint := 0;
    v_positions bigint[];
    v_hashes text[];
BEGIN
    PERFORM 1 FROM kg_log_head WHERE id = 1 FOR UPDATE;  -- no append meanwhile
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

REVOKE ALL ON FUNCTION kg_merkle_extend(text, bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION kg_merkle_rebuild(text, int) FROM PUBLIC;
"""


def _append(schema: str, body: str) -> str:
    path = f'"{schema}", pg_temp'
    return (
        body.replace("{path}", path)
        .replace("{_TENANT_CHECK}", _TENANT_CHECK)
        .replace("{GENESIS}", GENESIS)
    )


# kg_append_events as migration 0009 made it, plus the call that extends the tree (marked).
_APPEND_WITH_TREE = """
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
    PERFORM kg_merkle_extend(p_tenant, p_positions, p_hashes);
    PERFORM pg_notify('kg_events', (v_head + v_count)::text);
    RETURN v_head + v_count;
END $$;
"""

_APPEND_WITHOUT_TREE = """
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
"""


def upgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_TABLES)
    op.execute(_extend(schema))
    op.execute(_append(schema, _APPEND_WITH_TREE))
    # Existing logs get their trees now; a tenant's tree is as if built append by append.
    op.execute("SELECT kg_merkle_rebuild(tenant_id) FROM kg_chain_heads ORDER BY tenant_id")


def downgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_append(schema, _APPEND_WITHOUT_TREE))
    op.execute(
        """
        DROP FUNCTION IF EXISTS kg_merkle_rebuild(text, int);
        DROP FUNCTION IF EXISTS kg_merkle_extend(text, bigint[], text[]);
        DROP TABLE IF EXISTS kg_merkle_nodes, kg_merkle_frontier, kg_merkle_log;
        """
    )
