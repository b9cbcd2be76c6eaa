"""The query vector of a semantic call, or full text when no vector can be trusted.

A semantic search or build embeds its task text. It falls back to full text, with a warning
naming the embedder and the error, when the embedder is unavailable, and without asking it when
the configured embedder is not the model the index holds vectors of (two models' vectors are
never compared). It also says how many of the project's nodes wait for a vector
(:mod:`kg.projections.embedding_backlog`): a build never silently uses half-embedded data.
"""

from __future__ import annotations

from collections.abc import Sequence

from kg.embeddings.base import EmbeddingProvider
from kg.embeddings.cache import query_vector
from kg.errors import EmbeddingError
from kg.projections.embedding_backlog import EmbeddingState


def waiting_warning(waiting: int) -> str:
    return (
        f"{waiting} node(s) of this project wait for an embedding (an ingest is still "
        "embedding them or was interrupted, or the embedder was unavailable): vector search "
        "cannot find them, full text can. The running or next `kg ingest` or `kg sync` "
        "embeds them"
    )


def fallback_warning(problem: str) -> str:
    return f"semantic search fell back to full text: {problem}"


async def task_vectors(
    embedder: EmbeddingProvider | None, state: EmbeddingState, texts: Sequence[str]
) -> tuple[list[str] | None, list[str]]:
    """The vector literal of each of ``texts``, or None (search full text only), and the
    warnings to show with the result."""
    warnings = [waiting_warning(state.waiting)] if state.waiting else []
    if embedder is None:
        return None, warnings
    if state.index_model is not None and state.index_model != embedder.model_id:
        warnings.append(
            fallback_warning(
                f"the index holds vectors of {state.index_model}, but the configured embedder "
                f"is {embedder.model_id}. Set KG_EMBEDDER to match, or run `kg projections "
                f"rebuild kg_nodes` to re-embed the graph with {embedder.model_id}"
            )
        )
        return None, warnings
    try:
        vectors = [await query_vector(embedder, text) for text in texts]
    except EmbeddingError as error:
        warnings.append(fallback_warning(str(error)))
        return None, warnings
    return vectors, warnings
