"""The content-addressed embedding cache: (model id, content hash) -> vector, in PostgreSQL.

Unchanged content is never embedded twice, and a projection rebuild recomputes nothing: the
projection joins this table instead of shipping vectors back and forth. The cache also pins the
one model whose vectors the ``kg_nodes`` index holds, so two models are never mixed.
"""

from __future__ import annotations

import asyncio
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import asyncpg

from kg.embeddings.base import EmbeddingProvider
from kg.errors import EmbeddingError

INDEX_DIMENSIONS = 384
_MAX_EMBED_CHARS = 4000


def embedding_text(name: str, content: str, place: str = "") -> str:
    """What gets embedded for a node: where it sits (a section's file and heading path, which
    ends with its name) or else its name, then the start of its content. The heading path
    tells the model what a terse section ("Limits", "Errors") is about."""
    title = place or name
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
    from kg.context.passages import split_passages

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


async def check_index_model(conn: asyncpg.Connection, provider: EmbeddingProvider) -> None:
    """Pin the index to ``provider``'s model on first use; refuse a different model later."""
    if provider.dimensions != INDEX_DIMENSIONS:
        raise EmbeddingError(
            f"embedder {provider.model_id} gives {provider.dimensions}-dimensional vectors; the "
            f"kg_nodes index stores {INDEX_DIMENSIONS}. Configure a {INDEX_DIMENSIONS}-dimension "
            "model (KG_EMBEDDER_DIMENSIONS=384 for an OpenAI-compatible endpoint that supports it)"
        )
    row = await conn.fetchrow("SELECT model_id FROM kg_embedding_index WHERE id = 1")
    if row is None:
        await conn.execute(
            "INSERT INTO kg_embedding_index VALUES (1, $1, $2) ON CONFLICT (id) DO NOTHING",
            provider.model_id,
            provider.dimensions,
        )
    elif row["model_id"] != provider.model_id:
        raise EmbeddingError(
            f"the kg_nodes index holds vectors of {row['model_id']}, but the configured embedder "
            f"is {provider.model_id}; vectors of two models cannot share one index. Set "
            f"KG_EMBEDDER to match, or run `kg projections rebuild kg_nodes` to re-embed "
            f"everything with {provider.model_id}"
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
) -> int:
    """Make sure every ``content hash -> text`` in ``texts`` has a cached vector for the
    provider's model; embed only the missing ones, in chunks of :data:`EMBED_CHUNK` (each
    reported to ``on_embedded``). Returns how many were embedded."""
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
    for start in range(0, len(missing), EMBED_CHUNK):
        chunk = missing[start : start + EMBED_CHUNK]
        vectors = await asyncio.to_thread(provider.embed, [texts[h] for h in chunk])
        if len(vectors) != len(chunk):
            raise EmbeddingError(
                f"{provider.model_id} returned {len(vectors)} vectors for {len(chunk)} texts"
            )
        await _insert_vectors(conn, provider.model_id, chunk, vectors)
        if on_embedded is not None:
            on_embedded(len(chunk))
    return len(missing)


_BINARY_FROM = 64
"""Batches of at least this many vectors are sent in binary (see :func:`_insert_vectors`)."""


def vector_binary(vectors: Sequence[Sequence[float]]) -> list[bytes]:
    """pgvector's binary wire format of each vector: dimension and a reserved word (uint16,
    big-endian), then the components as big-endian float4."""
    import numpy as np

    try:
        matrix = np.asarray(vectors, dtype=">f4")
    except ValueError as exc:  # ragged
        raise EmbeddingError(f"the embedder returned vectors of different sizes: {exc}") from exc
    if matrix.ndim != 2:
        raise EmbeddingError("the embedder returned vectors of different sizes")
    head = struct.pack(">HH", matrix.shape[1], 0)
    return [head + row.tobytes() for row in matrix]


async def _insert_vectors(
    conn: asyncpg.Connection, model_id: str, hashes: list[str], vectors: list[list[float]]
) -> None:
    """Insert vectors in pgvector's binary format: formatting them as text cost ~0.1 ms a
    vector (384 floats), more than the insert itself.

    The binary codec is set on this connection for the one statement and then removed:
    everything else (search among others) passes and reads vectors as text. Setting it costs
    two round trips and the connection's prepared statements, so a few vectors (a one-file
    sync) go as text.
    """
    if len(vectors) < _BINARY_FROM:
        await conn.execute(
            """
            INSERT INTO embedding_cache (model_id, content_hash, embedding)
            SELECT $1, h, v::vector FROM unnest($2::text[], $3::text[]) AS x(h, v)
            ON CONFLICT DO NOTHING
            """,
            model_id,
            hashes,
            [vector_literal(v) for v in vectors],
        )
        return
    schema = await conn.fetchval(
        "SELECT typnamespace::regnamespace::text FROM pg_type WHERE oid = 'vector'::regtype"
    )
    blobs = vector_binary(vectors)
    await conn.set_type_codec(
        "vector", schema=schema, encoder=_identity, decoder=_identity, format="binary"
    )
    try:
        await conn.execute(
            """
            INSERT INTO embedding_cache (model_id, content_hash, embedding)
            SELECT $1, h, v FROM unnest($2::text[], $3::vector[]) AS x(h, v)
            ON CONFLICT DO NOTHING
            """,
            model_id,
            hashes,
            blobs,
        )
    finally:
        await conn.reset_type_codec("vector", schema=schema)


def _identity(value: bytes) -> bytes:
    return value


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
