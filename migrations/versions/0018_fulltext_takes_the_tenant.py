"""``kg_fulltext_bm25`` takes the tenant as its first argument instead of reading the setting.

Why: on a Citus cluster a search is one query routed to the worker holding the tenant's shards,
and the function, called inside it, runs there. Its read of ``kg_nodes`` is then a distributed
query of its own; with the tenant from ``current_setting`` Citus cannot tell which shard it
reads, and sends it to every worker from inside a shard query, which fails ("the backend has
already been assigned a transaction id"). With the tenant an argument the read is pruned to the
tenant's shard, on the same worker, and runs locally. The function still returns nothing for a
tenant other than the transaction's (``p_tenant = current_setting('kg.tenant_id', true)``): as
before, a caller cannot search another tenant's nodes through it. Same ranking, same results.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

OLD = "kg_fulltext_bm25(text, tsquery, text[], text[], integer, float8)"
NEW = "kg_fulltext_bm25(text, text, tsquery, text[], text[], integer, float8)"


def _body(tenant_first: bool) -> str:
    where = (
        "n.tenant_id = p_tenant AND p_tenant = current_setting('kg.tenant_id', true)"
        if tenant_first
        else "n.tenant_id = current_setting('kg.tenant_id', true)"
    )
    args = "p_tenant text, p_project text" if tenant_first else "p_project text"
    signature = NEW if tenant_first else OLD
    return f"""
        CREATE FUNCTION kg_fulltext_bm25(
            {args}, p_query tsquery, p_terms text[], p_types text[], p_cap integer,
            p_size float8
        ) RETURNS TABLE (node_id text, rank real)
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, public
        AS $$
            WITH matches AS (
                SELECT n.node_id, ts_filter(setweight(n.tsv, 'A', p_terms), '{{a}}') AS hit
                  FROM kg_nodes n
                 WHERE {where}
                   AND n.project_id = p_project
                   AND (p_types IS NULL OR n.node_type = ANY (p_types))
                   AND n.tsv @@ p_query
                 LIMIT p_cap
            ), tf AS (
                SELECT m.node_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
                  FROM matches m, unnest(m.hit) u
                 WHERE u.lexeme = ANY (p_terms)
            ), df AS (
                SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme
            ), size AS (
                SELECT greatest(p_size, 2 * count(*)::float8) AS n FROM matches
            )
            SELECT tf.node_id,
                   sum(ln(1 + (size.n - df.df + 0.5) / (df.df + 0.5))
                       * tf.tf * 2.2 / (tf.tf + 1.2))::real
              FROM tf JOIN df USING (lexeme), size
             GROUP BY tf.node_id
        $$;
        REVOKE ALL ON FUNCTION {signature} FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION {signature} TO kg_app;
    """


def upgrade() -> None:
    op.execute(f"DROP FUNCTION {OLD}")
    op.execute(_body(tenant_first=True))


def downgrade() -> None:
    op.execute(f"DROP FUNCTION {NEW}")
    op.execute(_body(tenant_first=False))
