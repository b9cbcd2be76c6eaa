"""Full-text ranking by BM25 (term rarity) instead of ``ts_rank_cd`` (term proximity).

``ts_rank_cd`` has no notion of how rare a term is: for an agent's question in natural language
("what happens to their other logins, including the phone app?") a section matching its common
words ranked with one matching its one rare word. ``kg_fulltext_bm25`` scores each match by
BM25 without length normalisation (k1 = 1.2, b = 0: long sections are not penalised, since a
long section is often the one that defines a thing). The document frequency of each query term
is counted among the matches, which hold every node that contains any of the terms, so it is
the project's own (exact unless ``p_cap`` cut the matches); the project's size ``p_size``, which
only sets how much rarer terms weigh, is the planner's estimate (at least twice the matches).
Measured on the quality benchmark: query_knowledge_graph top-5 recall 0.79 -> 0.80
(bench/RESULTS.md).

Like ``kg_fulltext_matches`` (0006) it runs as the tables' owner so the GIN index is usable
under row-level security, and it reads the tenant from the session setting the policy reads.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
        CREATE FUNCTION kg_fulltext_bm25(
            p_project text, p_query tsquery, p_terms text[], p_types text[], p_cap integer,
            p_size float8
        ) RETURNS TABLE (node_id text, rank real)
        LANGUAGE sql STABLE SECURITY DEFINER
        SET search_path = pg_catalog, public
        AS $$
            WITH matches AS (
                -- each match's tsvector cut to the query's terms (and its heading's words,
                -- which carry weight A already; the join below drops them)
                SELECT n.node_id, ts_filter(setweight(n.tsv, 'A', p_terms), '{a}') AS hit
                  FROM kg_nodes n
                 WHERE n.tenant_id = current_setting('kg.tenant_id', true)
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
        REVOKE ALL ON FUNCTION kg_fulltext_bm25(text, tsquery, text[], text[], integer, float8)
            FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION kg_fulltext_bm25(text, tsquery, text[], text[], integer, float8)
            TO kg_app;
        """
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION kg_fulltext_bm25(text, tsquery, text[], text[], integer, float8)")
