"""Embeddings of any size, and an index of the nodes that wait for one.

Why: the embedding cache was ``vector(384)``, so a model of another size (an OpenAI-compatible
endpoint serving nomic-embed-text, 768 dimensions) could not be cached at all. The cache holds
the vectors of every model it has seen (keyed by model id), so its column becomes a plain
``vector``: dropping the size modifier is a catalogue change, no table rewrite.

``kg_nodes.embedding`` and ``kg_passages.embedding`` keep a fixed size, because pgvector's HNSW
index needs one: they are ``vector(N)`` for the N of the model the index is pinned to
(``kg_embedding_index``), 384 until a model of another size is pinned. The projection changes
the columns' type when it pins such a model, on empty tables (after ``kg projections rebuild
kg_nodes``), which rebuilds their HNSW indexes for the new size. The search queries stay as they
were (the planner uses the index for ``embedding <=> $1::vector``, as before), so the 384
default's search plan and latency do not change; an expression index on an untyped column
(``(embedding::vector(N))``) would have needed every query rewritten with the cast.

The partial indexes find, in a few pages, the nodes and passages that wait for a vector because
the embedder was unavailable when they were projected: ``kg status`` counts them, a semantic
build says how many, and the next ``kg ingest``/``kg sync`` embeds them. Empty (and nearly free)
when every node has its vector.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One statement each: Citus refuses several distributed objects in one command.
    op.execute("ALTER TABLE embedding_cache ALTER COLUMN embedding TYPE vector")
    op.execute(
        "CREATE INDEX kg_nodes_unembedded ON kg_nodes (tenant_id, project_id) "
        "WHERE embedding IS NULL"
    )
    op.execute(
        "CREATE INDEX kg_passages_unembedded ON kg_passages (tenant_id, project_id) "
        "WHERE embedding IS NULL"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS kg_passages_unembedded")
    op.execute("DROP INDEX IF EXISTS kg_nodes_unembedded")
    # Only vectors of 384 dimensions fit the old column.
    op.execute("DELETE FROM embedding_cache WHERE vector_dims(embedding) <> 384")
    op.execute("ALTER TABLE embedding_cache ALTER COLUMN embedding TYPE vector(384)")
