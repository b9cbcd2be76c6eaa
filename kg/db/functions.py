"""SQL functions the application calls, for schemas created at run time (audit replays).

``kg_fulltext_matches`` is created in ``public`` by migration 0006 (which keeps its own copy
of this text, as migrations do); a replay schema needs its own, bound to its own tables.
"""

from __future__ import annotations


def fulltext_matches_sql(schema: str) -> str:
    """DDL of ``kg_fulltext_matches`` reading ``{schema}.kg_nodes``; see migration 0006 for why
    it exists (the GIN index under row-level security)."""
    return f"""
        CREATE FUNCTION "{schema}".kg_fulltext_matches(
            p_project text, p_query tsquery, p_types text[], p_cap integer
        ) RETURNS TABLE (node_id text, rank real)
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, "{schema}"
        AS $$
            SELECT n.node_id, ts_rank_cd(n.tsv, p_query)
              FROM kg_nodes n
             WHERE n.tenant_id = current_setting('kg.tenant_id', true)
               AND n.project_id = p_project
               AND (p_types IS NULL OR n.node_type = ANY (p_types))
               AND n.tsv @@ p_query
             LIMIT p_cap
        $$;
        REVOKE ALL ON FUNCTION "{schema}".kg_fulltext_matches(text, tsquery, text[], integer)
            FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION "{schema}".kg_fulltext_matches(text, tsquery, text[], integer)
            TO kg_app;
    """
