"""SQL functions the application calls, for schemas created at run time (audit replays).

``kg_fulltext_bm25`` is created in ``public`` by migrations 0015, 0018 and 0020 (which keep their
own copy of this text, as migrations do); a replay schema needs its own, bound to its own tables.
"""

from __future__ import annotations

SIGNATURE = "text, text, text[], text[], integer, float8, float8"


def fulltext_bm25_sql(schema: str) -> str:
    """DDL of ``kg_fulltext_bm25`` reading ``{schema}.kg_nodes``; see migrations 0006 (why a
    function: the GIN index under row-level security), 0015 (the ranking), 0018 (the tenant an
    argument: a Citus cluster prunes the function's read to the tenant's shard) and 0020 (the
    task's rarer terms decide which nodes are read; the common ones only score them)."""
    return f"""
        CREATE FUNCTION "{schema}".kg_fulltext_bm25(
            p_tenant text, p_project text, p_terms text[], p_types text[], p_cap integer,
            p_size float8, p_match_rows float8
        ) RETURNS TABLE (node_id text, rank real)
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, "{schema}"
        AS $$
            WITH stats AS (
                SELECT u.lexeme, u.freq
                  FROM pg_stats s,
                       unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs)
                           AS u(lexeme, freq)
                 WHERE s.schemaname = '{schema}' AND s.tablename = 'kg_nodes'
                   AND s.attname = 'tsv' AND u.lexeme = ANY (p_terms)
            ), terms AS (
                SELECT t.lexeme, coalesce(s.freq, 0) * p_size AS est
                  FROM unnest(p_terms) AS t(lexeme) LEFT JOIN stats s USING (lexeme)
            ), ordered AS (
                SELECT lexeme, row_number() OVER w AS i, sum(est) OVER w AS running
                  FROM terms WINDOW w AS (ORDER BY est, lexeme)
            ), chosen AS (
                SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q
                  FROM ordered WHERE i = 1 OR running <= p_match_rows
            ), matches AS (
                SELECT n.node_id, ts_filter(setweight(n.tsv, 'A', p_terms), '{{a}}') AS hit
                  FROM kg_nodes n
                 WHERE n.tenant_id = p_tenant
                   AND p_tenant = current_setting('kg.tenant_id', true)
                   AND n.project_id = p_project
                   AND (p_types IS NULL OR n.node_type = ANY (p_types))
                   AND n.tsv @@ (SELECT q FROM chosen)
                 LIMIT p_cap
            ), tf AS (
                SELECT m.node_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
                  FROM matches m, unnest(m.hit) u
                 WHERE u.lexeme = ANY (p_terms)
            ), df AS (
                SELECT tf.lexeme, greatest(count(*)::float8, max(t.est)) AS df
                  FROM tf JOIN terms t USING (lexeme) GROUP BY tf.lexeme
            ), size AS (
                SELECT greatest(p_size, 2 * count(*)::float8) AS n FROM matches
            )
            SELECT tf.node_id,
                   sum(ln(1 + (size.n - df.df + 0.5) / (df.df + 0.5))
                       * tf.tf * 2.2 / (tf.tf + 1.2))::real
              FROM tf JOIN df USING (lexeme), size
             GROUP BY tf.node_id
        $$;
        REVOKE ALL ON FUNCTION "{schema}".kg_fulltext_bm25({SIGNATURE}) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION "{schema}".kg_fulltext_bm25({SIGNATURE}) TO kg_app;
    """
