"""``kg_fulltext_bm25`` reads the nodes that hold the task's rarer terms, and no sample.

Why: a task in an agent's words is mostly common words ("how", "test", "config", "feature"), and
its OR'ed terms matched a large share of a real repository. The function read only the first
``p_cap`` (2,000) matches in table order, an arbitrary sample, and past 5,000 estimated matches
the search ranked full text only among the vector candidates: on the real dev corpora the
section holding the task's one distinctive word was often never read (issue 31; without either
limit gold recall at 800 tokens rose 0.58 -> 0.64 on speckit-deacon and 0.37 -> 0.51 on
bmad-docvet's hashing graph, bench/RESULTS.md). Now the function reads the planner's statistics of
``kg_nodes.tsv`` (``pg_stats``: the most common lexemes and their frequencies) and matches on
the task's terms from the rarest up, while their estimated matches add up to at most
``p_match_rows`` (the rarest always). Every node holding a rare term is read, so the search is
bounded by design instead of by a sample; the common terms still score the nodes read, with
their document frequency from the statistics (their count among the matches alone would
understate it). Without statistics (a table never analysed; a Citus worker, whose shard
tables have their own names) every term counts as rare and the function reads up to ``p_cap``
matches, as before. ``SECURITY DEFINER`` lets it read the statistics that ``pg_stats`` hides
from a role under row-level security. ``kg_rarest_term_rows`` gives the search the estimated
matches of the task's rarest term from the same statistics: a task whose rarest term matches
more nodes than the read may take has nothing distinctive for full text to find, and the search
ranks full text among the vector candidates instead (as it did past 5,000 estimated matches).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

OLD = "kg_fulltext_bm25(text, text, tsquery, text[], text[], integer, float8)"
NEW = "kg_fulltext_bm25(text, text, text[], text[], integer, float8, float8)"
RAREST = "kg_rarest_term_rows(text[], float8)"

_STATS = """
        SELECT u.lexeme, u.freq
          FROM pg_stats s,
               unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs)
                   AS u(lexeme, freq)
         WHERE s.schemaname = 'public' AND s.tablename = 'kg_nodes' AND s.attname = 'tsv'
           AND u.lexeme = ANY (p_terms)
"""

_RAREST = f"""
CREATE FUNCTION kg_rarest_term_rows(p_terms text[], p_size float8) RETURNS float8
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    WITH stats AS ({_STATS})
    SELECT coalesce(min(coalesce(s.freq, 0) * p_size), 0)
      FROM unnest(p_terms) AS t(lexeme) LEFT JOIN stats s USING (lexeme)
$$;
"""

_SCORE = """
    ), size AS (
        SELECT greatest(p_size, 2 * count(*)::float8) AS n FROM matches
    )
    SELECT tf.node_id,
           sum(ln(1 + (size.n - df.df + 0.5) / (df.df + 0.5)) * tf.tf * 2.2 / (tf.tf + 1.2))::real
      FROM tf JOIN df USING (lexeme), size
     GROUP BY tf.node_id
$$;
"""

_MATCHES = """
    matches AS (
        SELECT n.node_id, ts_filter(setweight(n.tsv, 'A', p_terms), '{a}') AS hit
          FROM kg_nodes n
         WHERE n.tenant_id = p_tenant AND p_tenant = current_setting('kg.tenant_id', true)
           AND n.project_id = p_project
           AND (p_types IS NULL OR n.node_type = ANY (p_types))
           AND n.tsv @@ %s
         LIMIT p_cap
    ), tf AS (
        SELECT m.node_id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
          FROM matches m, unnest(m.hit) u
         WHERE u.lexeme = ANY (p_terms)
"""

_HEAD = """
CREATE FUNCTION kg_fulltext_bm25(%s) RETURNS TABLE (node_id text, rank real)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    WITH
"""

_NEW = (
    _HEAD
    % (
        "p_tenant text, p_project text, p_terms text[], p_types text[], p_cap integer, "
        "p_size float8, p_match_rows float8"
    )
    + """
    stats AS ("""
    + _STATS
    + """
    ), terms AS (
        SELECT t.lexeme, coalesce(s.freq, 0) * p_size AS est
          FROM unnest(p_terms) AS t(lexeme) LEFT JOIN stats s USING (lexeme)
    ), ordered AS (
        SELECT lexeme, row_number() OVER w AS i, sum(est) OVER w AS running
          FROM terms WINDOW w AS (ORDER BY est, lexeme)
    ), chosen AS (
        SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS q
          FROM ordered WHERE i = 1 OR running <= p_match_rows
    ),"""
    + _MATCHES % "(SELECT q FROM chosen)"
    + """
    ), df AS (
        SELECT tf.lexeme, greatest(count(*)::float8, max(t.est)) AS df
          FROM tf JOIN terms t USING (lexeme) GROUP BY tf.lexeme"""
    + _SCORE
)

_OLD = (
    _HEAD
    % (
        "p_tenant text, p_project text, p_query tsquery, p_terms text[], p_types text[], "
        "p_cap integer, p_size float8"
    )
    + _MATCHES % "p_query"
    + """
    ), df AS (
        SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme"""
    + _SCORE
)


def _grant(signature: str) -> str:
    return (
        f"REVOKE ALL ON FUNCTION {signature} FROM PUBLIC; "
        f"GRANT EXECUTE ON FUNCTION {signature} TO kg_app"
    )


def upgrade() -> None:
    op.execute(f"DROP FUNCTION {OLD}")
    op.execute(_NEW)
    op.execute(_grant(NEW))
    op.execute(_RAREST)
    op.execute(_grant(RAREST))


def downgrade() -> None:
    op.execute(f"DROP FUNCTION {RAREST}")
    op.execute(f"DROP FUNCTION {NEW}")
    op.execute(_OLD)
    op.execute(_grant(OLD))
