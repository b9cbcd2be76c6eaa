"""The Merkle frontier moves into the tenant's ``kg_chain_heads`` row: one row per append.

Why: appending with the tree maintained lost up to 17% of throughput (8 writers in batches of
10, issue 16, bench/RESULTS.md) against the same append without the tree. Besides the
``kg_chain_heads`` row the append already locks and updates, the extension (0012's
``kg_merkle_extend``, a SECURITY DEFINER call with its own ``search_path``) read and rewrote the
tenant's ``kg_merkle_frontier`` row, all while the head row was locked, which lengthens the
serial section every other writer of the tenant waits on.

* ``kg_chain_heads`` gains ``tree_size`` and ``tree_border`` (the compact range: the roots of
  the perfect subtrees of the set bits of the size, ``tree_border[level + 1]``). The append
  reads them with the head (the ``SELECT ... FOR UPDATE`` it already makes) and writes them
  with the head (its one ``UPDATE``). Existing frontiers are moved in place;
  ``kg_merkle_frontier`` is dropped.
* ``kg_merkle_grow(tenant, size, border, positions, hashes)`` replaces ``kg_merkle_extend``: it
  takes the frontier as arguments and returns the new border, writing only the completed
  subtrees of level 4 and up to ``kg_merkle_nodes`` (one INSERT, in the appends that complete
  one). No SECURITY DEFINER of its own (only the owner's functions call it, so no second
  ``search_path`` switch per append) and no row read or written for the frontier. Same RFC 9162
  hashing, same stored nodes: the trees and every checkpoint taken before stay valid.
* ``kg_merkle_rebuild`` builds through ``kg_merkle_grow`` and stores the frontier in the head
  row.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

GENESIS = "0" * 64

_TENANT_CHECK = """
    IF p_tenant IS DISTINCT FROM current_setting('kg.tenant_id', true) THEN
        RAISE EXCEPTION 'append for tenant % outside the transaction''s tenant scope', p_tenant
            USING ERRCODE = 'insufficient_privilege';
    END IF;
"""

GROW_SIGNATURE = "kg_merkle_grow(text, bigint, bytea[], bigint[], text[])"

_COLUMNS_UP = """
ALTER TABLE kg_chain_heads
    ADD COLUMN tree_size   bigint  NOT NULL DEFAULT 0,
    ADD COLUMN tree_border bytea[] NOT NULL DEFAULT '{}';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM kg_merkle_frontier f
                WHERE NOT EXISTS (SELECT 1 FROM kg_chain_heads h WHERE h.tenant_id = f.tenant_id))
    THEN
        RAISE EXCEPTION 'a Merkle frontier belongs to a tenant without a chain head: run '
            'SELECT kg_merkle_rebuild(tenant_id) for it, or remove its row'
            USING ERRCODE = 'data_corrupted';
    END IF;
END $$;
UPDATE kg_chain_heads h SET tree_size = f.size, tree_border = f.border
  FROM kg_merkle_frontier f WHERE f.tenant_id = h.tenant_id;
DROP TABLE kg_merkle_frontier;
"""


def grow_sql(schema: str) -> str:
    """``kg_merkle_grow``: the tree's extension by a batch of leaves, the frontier passed in and
    returned (the caller keeps it in the tenant's head row)."""
    return f"""
CREATE FUNCTION kg_merkle_grow(
    p_tenant text, p_size bigint, p_border bytea[], p_positions bigint[], p_hashes text[]
) RETURNS bytea[]
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    v_count int := coalesce(cardinality(p_hashes), 0);
    s bigint := p_size;     -- the tree's size before the batch
    e bigint;               -- and after
    b bytea[] := p_border;  -- the compact range: b[lv + 1] is the border subtree of level lv
    a bytea[];              -- the new nodes of level lv, indices lo, lo + 1, ...
    lo bigint;
    lv int;
    n_level smallint[];
    n_idx bigint[];
    n_hash bytea[];
    n_pos bigint[];
    v_h bytea;
    v_k int;
BEGIN
    IF v_count = 0 THEN
        RETURN b;
    END IF;
    IF v_count <= 32 THEN
        -- A small append (the common case): leaf by leaf in plpgsql expressions, which skip
        -- the per-statement cost of a query. An append is a transaction of its own, and each
        -- distinct expression is prepared again in each transaction: so few and small ones
        -- (hashing aligned groups of leaves in one large expression measured slower).
        FOR v_k IN 1 .. v_count LOOP
            v_h := sha256('\\x00'::bytea || decode(p_hashes[v_k], 'hex'));
            lv := 0;
            -- Leaf s + v_k - 1 completes one node per trailing 1 bit of its index.
            WHILE ((s + v_k - 1) >> lv) & 1 = 1 LOOP
                v_h := sha256('\\x01'::bytea || b[lv + 1] || v_h);
                b[lv + 1] := NULL;
                lv := lv + 1;
                IF lv >= 4 THEN
                    n_level := array_append(n_level, lv::smallint);
                    n_idx := array_append(n_idx, (s + v_k - 1) >> lv);
                    n_hash := array_append(n_hash, v_h);
                    n_pos := array_append(n_pos, p_positions[v_k]);
                END IF;
            END LOOP;
            IF v_h IS NULL THEN  -- a border node it merged with was missing
                RAISE EXCEPTION 'the Merkle frontier of tenant % is corrupt below level % '
                    '(size %): rebuild the tree (kg_merkle_rebuild)', p_tenant, lv, s
                    USING ERRCODE = 'data_corrupted';
            END IF;
            b[lv + 1] := v_h;
        END LOOP;
    ELSE
        e := s + v_count;
        lo := s;
        lv := 0;
        n_level := '{{}}';
        n_idx := '{{}}';
        n_hash := '{{}}';
        n_pos := '{{}}';
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
            n_pos := n_pos || ARRAY(SELECT p_positions[((lo + j + 1) << lv) - s]
                                      FROM generate_series(0, cardinality(a) - 1) AS j
                                     ORDER BY j);
        END LOOP;
    END IF;
    IF n_idx IS NOT NULL AND cardinality(n_idx) > 0 THEN
        INSERT INTO "{schema}".kg_merkle_nodes (tenant_id, level, idx, hash, position)
        SELECT p_tenant, x.l, x.i, x.h, x.p
          FROM unnest(n_level, n_idx, n_hash, n_pos) AS x(l, i, h, p);
    END IF;
    RETURN b;
END $$;
REVOKE ALL ON FUNCTION {GROW_SIGNATURE} FROM PUBLIC;
"""


def append_sql(schema: str) -> str:
    """``kg_append_events`` (0013's, 14 arguments) with the tree's frontier read and written
    with the tenant's head row."""
    path = f'"{schema}", pg_temp'
    return f"""
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
    v_size bigint;
    v_border bytea[];
    v_count int := coalesce(cardinality(p_positions), 0);
BEGIN
    {_TENANT_CHECK}
    IF v_count = 0 THEN
        RAISE EXCEPTION 'append has no events' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO kg_chain_heads (tenant_id, position, hash) VALUES (p_tenant, 0, '{GENESIS}')
        ON CONFLICT (tenant_id) DO NOTHING;
    SELECT c.position, c.hash, c.tree_size, c.tree_border
      INTO v_head, v_chain, v_size, v_border
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
    v_border := kg_merkle_grow(p_tenant, v_size, v_border, p_positions, p_hashes);
    UPDATE kg_chain_heads SET position = v_head + v_count, hash = p_hashes[v_count],
                              tree_size = v_size + v_count, tree_border = v_border
     WHERE tenant_id = p_tenant;
    PERFORM pg_notify('kg_events', (v_head + v_count)::text);
    RETURN v_head + v_count;
END $$;
"""


def rebuild_sql(schema: str) -> str:
    path = f'"{schema}", pg_temp'
    return f"""
CREATE OR REPLACE FUNCTION kg_merkle_rebuild(p_tenant text, p_chunk int DEFAULT 50000)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = {path} AS $$
DECLARE
    v_last bigint := 0;
    v_size bigint := 0;
    v_border bytea[] := '{{}}';
    v_positions bigint[];
    v_hashes text[];
BEGIN
    PERFORM 1 FROM kg_chain_heads WHERE tenant_id = p_tenant FOR UPDATE;  -- no append meanwhile
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM kg_events WHERE tenant_id = p_tenant) THEN
            RAISE EXCEPTION 'tenant % has events but no chain head (kg_chain_heads), which '
                'keeps its tree''s frontier: restore the head row first', p_tenant
                USING ERRCODE = 'object_not_in_prerequisite_state';
        END IF;
        DELETE FROM kg_merkle_nodes WHERE tenant_id = p_tenant;
        RETURN 0;
    END IF;
    DELETE FROM kg_merkle_nodes WHERE tenant_id = p_tenant;
    LOOP
        SELECT array_agg(x.position ORDER BY x.position), array_agg(x.hash ORDER BY x.position)
          INTO v_positions, v_hashes
          FROM (SELECT k.position, k.hash FROM kg_events k
                 WHERE k.tenant_id = p_tenant AND k.position > v_last
                 ORDER BY k.tenant_id, k.position LIMIT p_chunk) x;
        EXIT WHEN v_positions IS NULL;
        v_border := kg_merkle_grow(p_tenant, v_size, v_border, v_positions, v_hashes);
        v_size := v_size + cardinality(v_positions);
        v_last := v_positions[cardinality(v_positions)];
    END LOOP;
    UPDATE kg_chain_heads SET tree_size = v_size, tree_border = v_border
     WHERE tenant_id = p_tenant;
    RETURN v_size;
END $$;
"""


_COLUMNS_DOWN = """
CREATE TABLE kg_merkle_frontier (
    tenant_id text    PRIMARY KEY,
    size      bigint  NOT NULL,
    border    bytea[] NOT NULL
);
INSERT INTO kg_merkle_frontier (tenant_id, size, border)
SELECT tenant_id, tree_size, tree_border FROM kg_chain_heads WHERE tree_size > 0;
ALTER TABLE kg_merkle_frontier ENABLE ROW LEVEL SECURITY;
CREATE POLICY kg_merkle_frontier_tenant ON kg_merkle_frontier TO kg_app
    USING (tenant_id = current_setting('kg.tenant_id', true));
GRANT SELECT ON kg_merkle_frontier TO kg_app;
"""


def _previous_functions(schema: str) -> str:
    """``kg_merkle_extend`` as 0012 made it; the append and rebuild functions as 0013 did."""
    import importlib

    m12 = importlib.import_module("migrations.versions.0012_merkle_tree")
    m13 = importlib.import_module("migrations.versions.0013_tenant_order")
    extend = m12._extend(schema).split("CREATE FUNCTION kg_merkle_rebuild")[0]
    extend += "REVOKE ALL ON FUNCTION kg_merkle_extend(text, bigint[], text[]) FROM PUBLIC;\n"
    return extend + m13._functions(schema)


def upgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_COLUMNS_UP)
    op.execute(grow_sql(schema))
    op.execute(append_sql(schema))
    op.execute(rebuild_sql(schema))
    op.execute("DROP FUNCTION kg_merkle_extend(text, bigint[], text[])")


def downgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_COLUMNS_DOWN)
    op.execute(_previous_functions(schema))
    op.execute(
        f"""
        DROP FUNCTION {GROW_SIGNATURE};
        ALTER TABLE kg_chain_heads DROP COLUMN tree_size, DROP COLUMN tree_border;
        """
    )
