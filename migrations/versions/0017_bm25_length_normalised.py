"""Full-text ranking normalises for length: BM25 with ``b = 0.5`` instead of 0.15's ``b = 0``.

Why: on real repositories (issue 31) long nodes without headings (AI chat transcripts, a
generated concatenation of the docs, a changelog) matched every question a little in many
places, and without length normalisation each of those small matches counted in full: in a
1,118-file repository 159 of the 210 top-5 places went to such files. With ``b = 0.5`` a node
twice the average length needs its terms about a third more often to score the same; a
section that defines a thing still wins on its own words. The average length is the matches'
own (the nodes that hold any of the query's terms), in bytes of name and content, so no
statistic has to be kept up to date. Same signature, same security as 0015's function.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_FUNCTION = """
CREATE OR REPLACE FUNCTION kg_fulltext_bm25(
    p_project text, p_query tsquery, p_terms text[], p_types text[], p_cap integer,
    p_size float8
) RETURNS TABLE (node_id text, rank real)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    WITH matches AS (
        SELECT n.node_id, ts_filter(setweight(n.tsv, 'A', p_terms), '{{a}}') AS hit,
               octet_length(n.name) + octet_length(n.content) + 1 AS len
          FROM kg_nodes n
         WHERE n.tenant_id = current_setting('kg.tenant_id', true)
           AND n.project_id = p_project
           AND (p_types IS NULL OR n.node_type = ANY (p_types))
           AND n.tsv @@ p_query
         LIMIT p_cap
    ), tf AS (
        SELECT m.node_id, m.len, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
          FROM matches m, unnest(m.hit) u
         WHERE u.lexeme = ANY (p_terms)
    ), df AS (
        SELECT lexeme, count(*)::float8 AS df FROM tf GROUP BY lexeme
    ), size AS (
        SELECT greatest(p_size, 2 * count(*)::float8) AS n,
               greatest(avg(len)::float8, 1) AS avg_len
          FROM matches
    )
    SELECT tf.node_id,
           sum(ln(1 + (size.n - df.df + 0.5) / (df.df + 0.5))
               * tf.tf * {k1_plus_1}
               / (tf.tf + {k1} * ({one_minus_b} + {b} * tf.len / size.avg_len)))::real
      FROM tf JOIN df USING (lexeme), size
     GROUP BY tf.node_id
$$;
"""


def upgrade() -> None:
    op.execute(_FUNCTION.format(k1=1.2, k1_plus_1=2.2, b=0.5, one_minus_b=0.5))


def downgrade() -> None:
    op.execute(_FUNCTION.format(k1=1.2, k1_plus_1=2.2, b=0, one_minus_b=1))
