"""The content-addressed embedding cache: (model id, content hash) -> vector, in PostgreSQL.

Unchanged content is never embedded twice, and a projection rebuild recomputes nothing: the
projection joins this table instead of shipping vectors back and forth. The cache also pins the
one model whose vectors the ``kg_nodes`` index holds, so two models are never mixed.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import asyncpg
import orjson

from kg.embeddings.base import EmbeddingProvider
from kg.errors import EmbeddingError
from kg.telemetry import embeddings_queued

_MAX_EMBED_CHARS = 4000


def embedding_text(name: str, content: str, place: str = "") -> str:
    """What gets embedded for a node: where it sits (a section's file and heading path, which
    ends with its name) or else its name, then the start of its content. The heading path
    tells the model what a terse section ("Limits", "Errors") is about.

    A long node (one with passages, :func:`passage_texts`) takes its first passage's text:
    its own vector is then its first passage's, embedded once (the content hash is the same).
    Embedding the start of its content again, read to the model's 256 word pieces, cost 13-14 %
    of a real repository's word pieces, and a node's vector distance is the best of its own
    and its passages' (kg/search.py), which that vector hardly changed (bench/RESULTS.md,
    issue 34 item 2)."""
    title = place or name
    if len(content) > PASSAGES_FROM_CHARS:
        passages = passage_texts(name, content, place)
        if passages:
            return passages[0]
    return f"{title}\n\n{content[:_MAX_EMBED_CHARS]}" if content else title


# A node whose content is longer than what the model reads (MiniLM: ~256 word pieces, ~1,000
# characters of English) also gets a vector per passage of about PASSAGE_EMBED_CHARS.
PASSAGES_FROM_CHARS = 1000
PASSAGE_EMBED_CHARS = 700
MAX_PASSAGES = 64


def passage_texts(name: str, content: str, place: str = "") -> list[str]:
    """What gets embedded for each passage of a long node (none for a short one): its place
    (or name) and the passage, so every passage knows which section it belongs to."""
    if len(content) <= PASSAGES_FROM_CHARS:
        return []
    from kg.passages import split_passages

    packed: list[str] = []
    for passage in split_passages(content, PASSAGE_EMBED_CHARS):
        if packed and len(packed[-1]) + 2 + len(passage) <= PASSAGE_EMBED_CHARS:
            packed[-1] += "\n\n" + passage
        else:
            packed.append(passage)
    title = place or name
    return [f"{title}\n\n{p}" for p in packed[:MAX_PASSAGES]]


def vector_literal(vector: list[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


class IndexModelMismatch(EmbeddingError):
    """The configured embedder is not the model the ``kg_nodes`` index holds vectors of."""


HNSW_MAX_DIMENSIONS = 2000
"""The largest ``vector`` pgvector's HNSW index takes (pgvector 0.7 and later)."""

_COLUMN_SIZE = (
    "SELECT atttypmod FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'embedding'"
)
# The tables whose vectors the HNSW indexes search: their column has the pinned model's size.
SIZED_TABLES = ("kg_nodes", "kg_passages")


async def check_index_model(conn: asyncpg.Connection, provider: EmbeddingProvider) -> None:
    """Pin the index to ``provider``'s model on first use; refuse a different model later.

    Pinning a model whose vectors have another size than the columns' changes the columns'
    type to ``vector(N)`` (their HNSW indexes follow); that happens on tables without vectors
    (a new database, or after ``kg projections rebuild kg_nodes`` emptied them), so no data is
    rewritten. Asks the provider for its size only then (an OpenAI-compatible endpoint of
    unconfigured size answers a probe).

    Raises:
        IndexModelMismatch: the index holds another model's vectors.
        EmbeddingError: the provider failed, or its size cannot be indexed.
    """
    row = await conn.fetchrow("SELECT model_id FROM kg_embedding_index WHERE id = 1")
    if row is not None:
        if row["model_id"] != provider.model_id:
            raise IndexModelMismatch(
                f"the kg_nodes index holds vectors of {row['model_id']}, but the configured "
                f"embedder is {provider.model_id}; vectors of two models cannot share one "
                f"index. Set KG_EMBEDDER to match, or run `kg projections rebuild kg_nodes` to "
                f"re-embed everything with {provider.model_id} (it shows the cost first)"
            )
        return
    dimensions = provider.dimensions
    if dimensions > HNSW_MAX_DIMENSIONS:
        raise EmbeddingError(
            f"embedder {provider.model_id} gives {dimensions}-dimensional vectors; pgvector's "
            f"HNSW index takes at most {HNSW_MAX_DIMENSIONS}. Set KG_EMBEDDER_DIMENSIONS to "
            f"{HNSW_MAX_DIMENSIONS} or less for a model that shortens its vectors (OpenAI's "
            "text-embedding-3 models do), or choose a smaller model"
        )
    for table in SIZED_TABLES:
        if await conn.fetchval(_COLUMN_SIZE, table) == dimensions:
            continue
        if await conn.fetchval(
            f"SELECT EXISTS (SELECT 1 FROM {table} WHERE embedding IS NOT NULL)"
        ):
            raise EmbeddingError(
                f"{table} holds vectors of a model the index does not name; run `kg projections "
                f"rebuild kg_nodes` to re-embed everything with {provider.model_id}"
            )
        await conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding TYPE vector({dimensions})")
    await conn.execute(
        "INSERT INTO kg_embedding_index VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
        provider.model_id,
        dimensions,
    )


async def index_model(conn: asyncpg.Connection) -> str | None:
    value = await conn.fetchval("SELECT model_id FROM kg_embedding_index WHERE id = 1")
    return str(value) if value is not None else None


EMBED_CHUNK = 256
"""Texts per call to the provider: a progress display moves every few seconds, and each call
still holds enough texts of similar length for the model's batching."""


async def ensure_cached(
    conn: asyncpg.Connection,
    provider: EmbeddingProvider,
    texts: Mapping[str, str],
    *,
    on_embedded: Callable[[int], None] | None = None,
    chunk: int = EMBED_CHUNK,
) -> int:
    """Make sure every ``content hash -> text`` in ``texts`` has a cached vector for the
    provider's model; embed only the missing ones, in chunks of ``chunk`` texts (each
    inserted, and reported to ``on_embedded``, as it comes). Returns how many were
    embedded."""
    if not texts:
        return 0
    present = await conn.fetch(
        "SELECT content_hash FROM embedding_cache WHERE model_id = $1 AND content_hash = ANY($2)",
        provider.model_id,
        list(texts),
    )
    known = {r["content_hash"] for r in present}
    missing = [h for h in texts if h not in known]
    if not missing:
        return 0
    # Longest first, so each chunk holds texts of similar length (little padding).
    missing.sort(key=lambda h: -len(texts[h]))
    embeddings_queued(len(missing))  # what /metrics shows as the embedder queue
    left = len(missing)
    try:
        for start in range(0, len(missing), chunk):
            part = missing[start : start + chunk]
            vectors = await asyncio.to_thread(provider.embed, [texts[h] for h in part])
            embeddings_queued(-len(part))
            left -= len(part)
            if len(vectors) != len(part):
                raise EmbeddingError(
                    f"{provider.model_id} returned {len(vectors)} vectors for {len(part)} texts"
                )
            await _insert_vectors(conn, provider.model_id, part, vectors)
            if on_embedded is not None:
                on_embedded(len(part))
    finally:
        embeddings_queued(-left)
    return len(missing)


# Each vector travels as pgvector's own text form (``[x,y,...]``), which ``vector_in`` reads
# with ``strtof``: the shortest decimal that reads back as the same float4 keeps every bit.
_INSERT = """
INSERT INTO embedding_cache (model_id, content_hash, embedding)
SELECT $1, x.h, x.v::vector
  FROM unnest($2::text[], $3::text[]) AS x(h, v)
ON CONFLICT DO NOTHING
"""


def vector_texts(vectors: Sequence[Sequence[float]]) -> list[str]:
    """Each vector in pgvector's text form, at float4 precision to the last bit.

    The vectors are rounded to float4 once (what pgvector stores) and written by orjson,
    which prints each float4 as the shortest decimal that reads back as that float4, in C.
    Sending them as one flat ``real[]`` instead made asyncpg check every element in Python
    (``isinstance`` against ABCs): 6,825 vectors of 384 numbers (a 5,000-directive ingest)
    took 0.4-0.7 s of Python CPU to insert that way and take 0.16-0.19 s this way, measured
    in one run on a loaded machine (bench/RESULTS.md, issue 20). Refuses ragged or non-finite
    vectors."""
    import numpy as np  # here, not at module level: a command that embeds nothing skips it

    try:
        matrix = np.asarray(vectors, dtype=np.float32)
    except ValueError as error:  # rows of different lengths
        raise EmbeddingError("the embedder returned vectors of different sizes") from error
    if matrix.ndim != 2:
        raise EmbeddingError("the embedder returned vectors of different sizes")
    if not np.isfinite(matrix).all():
        raise EmbeddingError("the embedder returned a vector with NaN or infinite values")
    text = orjson.dumps(matrix, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    # "[[a,b],[c,d]]": the rows are the pieces between "],[" (numbers hold no brackets).
    return ["[" + row + "]" for row in text[2:-2].split("],[")]


async def _insert_vectors(
    conn: asyncpg.Connection, model_id: str, hashes: list[str], vectors: list[list[float]]
) -> None:
    """Insert the vectors in one statement, each as text (:func:`vector_texts`). Earlier
    forms and why they went: each vector formatted in Python (``%.7g``, ~0.1 ms a vector and
    7 digits, not every bit); one flat ``real[]`` (exact, but asyncpg's per-element checks);
    pgvector's binary codec switched on for the statement (two round trips, and it dropped
    the connection's prepared statements each time: 84 times in an ingest of 2,000 files)."""
    await conn.execute(_INSERT, model_id, hashes, vector_texts(vectors))


_QUERY_CACHE: OrderedDict[tuple[str, str], str] = OrderedDict()
_QUERY_CACHE_SIZE = 1024


async def query_vector(provider: EmbeddingProvider, text: str) -> str:
    """The vector literal for a search text; repeated queries are served from a small LRU."""
    key = (provider.model_id, text)
    cached = _QUERY_CACHE.get(key)
    if cached is not None:
        _QUERY_CACHE.move_to_end(key)
        return cached
    (vector,) = await asyncio.to_thread(provider.embed, [text])
    literal = _QUERY_CACHE[key] = vector_literal(vector)
    if len(_QUERY_CACHE) > _QUERY_CACHE_SIZE:
        _QUERY_CACHE.popitem(last=False)
    return literal
