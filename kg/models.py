"""Typed models of kg's tables (SQLModel): a read API for Python users, and Alembic's target
metadata, so ``alembic check`` proves the migrations and this module describe the same schema.

Read the projected graph with any SQLAlchemy session::

    from sqlmodel import Session, create_engine, select
    from kg.models import Node, Edge

    with Session(create_engine(url)) as session:
        decisions = session.exec(
            select(Node).where(Node.tenant_id == "acme", Node.node_type == "Decision")
        ).all()

Connect as the ``kg_app`` role and set ``kg.tenant_id`` (``SELECT set_config('kg.tenant_id',
'acme', true)`` in the transaction) to read under row-level security, as kg itself does; as the
owner every tenant's rows are visible. These models are for reading: the log is written only
through the append functions, and projections only by kg's projection runner. kg's own hot
paths stay on asyncpg (measured faster; see bench/RESULTS.md).

The schema is changed by Alembic migrations only (``migrations/versions``); this module
follows them, and ``tests/db/test_models.py`` runs ``alembic check`` to keep the two equal.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pgvector.sqlalchemy import Vector
from sqlalchemy import (
    REAL,
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    SmallInteger,
    Text,
    UniqueConstraint,
    Uuid,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB, TSVECTOR
from sqlmodel import Field, SQLModel

DIMENSIONS = 384
"""The size of ``kg_nodes.embedding`` and ``kg_passages.embedding`` as migrated: the projection
changes it to the size of the model it pins the index to (migration 0019); the embedding cache
holds vectors of any size."""

metadata = SQLModel.metadata


def _col(type_: Any, *, pk: bool = False, nullable: bool = False) -> Any:
    return Field(sa_column=Column(type_, primary_key=pk, nullable=nullable))


def _tenant() -> Any:
    return _col(Text, pk=True)


# ---- the log (written only by the SECURITY DEFINER append functions) ----


class Event(SQLModel, table=True):
    """One event of a tenant's log; ``position`` is gapless and commit-ordered per tenant."""

    __tablename__ = "kg_events"
    __table_args__ = (
        UniqueConstraint("tenant_id", "event_id", name="kg_events_event_id_key"),
        UniqueConstraint(
            "tenant_id",
            "project_id",
            "stream_id",
            "stream_version",
            name="kg_events_stream_version_key",
        ),
        Index(
            "kg_events_idempotency",
            "tenant_id",
            "project_id",
            "idempotency_key",
            postgresql_where=text("idempotency_key IS NOT NULL"),
        ),
        Index("kg_events_type", "tenant_id", "event_type", "position"),
    )

    tenant_id: str = _tenant()
    position: int = _col(BigInteger, pk=True)
    event_id: uuid.UUID = _col(Uuid)
    project_id: str = _col(Text)
    stream_id: str = _col(Text)
    stream_version: int = _col(Integer)
    event_type: str = _col(Text)
    schema_version: int = _col(Integer)
    payload: dict[str, Any] = _col(JSONB)
    metadata_: dict[str, Any] = Field(sa_column=Column("metadata", JSONB, nullable=False))
    recorded_at: datetime = _col(DateTime(timezone=True))
    idempotency_key: str | None = _col(Text, nullable=True)
    prev_hash: str = _col(Text)
    hash: str = _col(Text)


class EventContent(SQLModel, table=True):
    """An event's erasable fields (migration 0014): ``body`` is the canonical JSON of
    ``{"fields", "salt"}``, and the event's payload holds ``sha256(body)``. Deleted whole by
    ``kg erase``."""

    __tablename__ = "kg_event_content"

    tenant_id: str = _tenant()
    position: int = _col(BigInteger, pk=True)
    body: str = _col(Text)


class ChainHead(SQLModel, table=True):
    """A tenant's head: the position and hash of its last event (the per-tenant counter), and
    its Merkle tree's frontier, written by the same update of the append (migration 0016):
    ``tree_size`` leaves and the roots of the perfect subtrees of its set bits
    (``tree_border[level]``, 0-based here, ``NULL`` for the levels of unset bits)."""

    __tablename__ = "kg_chain_heads"

    tenant_id: str = _tenant()
    position: int = _col(BigInteger)
    hash: str = _col(Text)
    gapless_after: int = _col(BigInteger)
    tree_size: int = _col(BigInteger)
    tree_border: list[bytes | None] = _col(ARRAY(LargeBinary))


class MerkleNode(SQLModel, table=True):
    """A perfect subtree (level 4 and up) of a tenant's Merkle tree (migration 0012)."""

    __tablename__ = "kg_merkle_nodes"
    __table_args__ = (
        Index(
            "kg_merkle_block_position",
            "tenant_id",
            "position",
            unique=True,
            postgresql_where=text("level = 4"),
        ),
    )

    tenant_id: str = _tenant()
    level: int = _col(SmallInteger, pk=True)
    idx: int = _col(BigInteger, pk=True)
    hash: bytes = _col(LargeBinary)
    position: int = _col(BigInteger)


class MerkleLog(SQLModel, table=True):
    """This log's random id (a reference table: one row, no tenant)."""

    __tablename__ = "kg_merkle_log"

    id: int = _col(SmallInteger, pk=True)
    log_id: uuid.UUID = _col(Uuid)


# ---- shared catalogues (reference tables) ----


class EmbeddingCacheEntry(SQLModel, table=True):
    __tablename__ = "embedding_cache"

    model_id: str = _col(Text, pk=True)
    content_hash: str = _col(Text, pk=True)
    embedding: list[float] = _col(Vector())


class EmbeddingIndex(SQLModel, table=True):
    __tablename__ = "kg_embedding_index"

    id: int = _col(SmallInteger, pk=True)
    model_id: str = _col(Text)
    dimensions: int = _col(Integer)


# ---- the projections (derived from the log; rebuilt by replaying it) ----


class ProjectionCheckpoint(SQLModel, table=True):
    """How far a projection has applied one tenant's log."""

    __tablename__ = "projection_checkpoints"

    tenant_id: str = _tenant()
    name: str = _col(Text, pk=True)
    position: int = _col(BigInteger)
    updated_at: datetime = _col(DateTime(timezone=True))


class Node(SQLModel, table=True):
    """A node of the knowledge graph (``node_id`` is ``"{type}:{id}"``)."""

    __tablename__ = "kg_nodes"
    __table_args__ = (
        Index("kg_nodes_type", "tenant_id", "project_id", "node_type"),
        Index("kg_nodes_tenant_type", "tenant_id", "node_type"),
        Index("kg_nodes_updated", "tenant_id", "project_id", "updated_at"),
        Index("kg_nodes_labels", "labels", postgresql_using="gin"),
        Index("kg_nodes_tsv", "tsv", postgresql_using="gin"),
        Index(
            "kg_nodes_embedding",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index(
            "kg_nodes_unembedded",
            "tenant_id",
            "project_id",
            postgresql_where=text("embedding IS NULL"),
        ),
    )

    tenant_id: str = _tenant()
    project_id: str = _col(Text, pk=True)
    node_id: str = _col(Text, pk=True)
    node_type: str = _col(Text)
    name: str = _col(Text)
    properties: dict[str, Any] = _col(JSONB)
    content: str = _col(Text)
    labels: list[str] = _col(ARRAY(Text))
    content_hash: str = _col(Text)
    embedding: list[float] | None = _col(Vector(DIMENSIONS), nullable=True)
    tsv: str = _col(TSVECTOR)
    created_at: datetime = _col(DateTime(timezone=True))
    updated_at: datetime = _col(DateTime(timezone=True))
    first_position: int = _col(BigInteger)
    last_position: int = _col(BigInteger)


class Passage(SQLModel, table=True):
    """A passage of a long node, with a vector of its own (migration 0011)."""

    __tablename__ = "kg_passages"
    __table_args__ = (
        Index(
            "kg_passages_embedding",
            "embedding",
            postgresql_using="hnsw",
            postgresql_ops={"embedding": "vector_cosine_ops"},
        ),
        Index(
            "kg_passages_unembedded",
            "tenant_id",
            "project_id",
            postgresql_where=text("embedding IS NULL"),
        ),
    )

    tenant_id: str = _tenant()
    project_id: str = _col(Text, pk=True)
    node_id: str = _col(Text, pk=True)
    ordinal: int = _col(Integer, pk=True)
    node_type: str = _col(Text)
    content_hash: str = _col(Text)
    embedding: list[float] | None = _col(Vector(DIMENSIONS), nullable=True)


class Edge(SQLModel, table=True):
    """A typed, weighted edge between two nodes of one tenant's project."""

    __tablename__ = "kg_edges"
    __table_args__ = (
        Index(
            "kg_edges_out",
            "tenant_id",
            "project_id",
            "from_node",
            text("weight DESC"),
            "edge_id",
            postgresql_include=["edge_type", "to_node"],
        ),
        Index(
            "kg_edges_in",
            "tenant_id",
            "project_id",
            "to_node",
            text("weight DESC"),
            "edge_id",
            postgresql_include=["edge_type", "from_node"],
        ),
        Index("kg_edges_type", "tenant_id", "project_id", "edge_type"),
        Index(
            "kg_edges_governed_by",
            "tenant_id",
            "project_id",
            "from_node",
            "to_node",
            postgresql_where=text("edge_type = 'GOVERNED_BY'"),
        ),
        Index(
            "kg_edges_supersedes",
            "tenant_id",
            "project_id",
            "to_node",
            "from_node",
            postgresql_where=text("edge_type = 'SUPERSEDES'"),
        ),
    )

    tenant_id: str = _tenant()
    project_id: str = _col(Text, pk=True)
    edge_id: str = _col(Text, pk=True)
    edge_type: str = _col(Text)
    from_node: str = _col(Text)
    to_node: str = _col(Text)
    properties: dict[str, Any] = _col(JSONB)
    weight: float = _col(REAL)
    created_at: datetime = _col(DateTime(timezone=True))
    updated_at: datetime = _col(DateTime(timezone=True))
    last_position: int = _col(BigInteger)


class ContextGraph(SQLModel, table=True):
    """A context graph that was handed out (projected from ``ContextGraphBuilt``)."""

    __tablename__ = "context_graphs"
    __table_args__ = (
        Index("context_graphs_nodes", "node_ids", postgresql_using="gin"),
        Index("context_graphs_session", "tenant_id", "project_id", "session_id"),
    )

    tenant_id: str = _tenant()
    project_id: str = _col(Text, pk=True)
    context_graph_id: str = _col(Text, pk=True)
    mode: str = _col(Text)
    request: dict[str, Any] = _col(JSONB)
    as_of_position: int = _col(BigInteger)
    node_ids: list[str] = _col(ARRAY(Text))
    edge_ids: list[str] = _col(ARRAY(Text))
    content_hash: str = _col(Text)
    policies_applied: list[str] = _col(ARRAY(Text))
    excluded_count: int = _col(Integer)
    redacted_count: int = _col(Integer)
    session_id: str | None = _col(Text, nullable=True)
    task_id: str | None = _col(Text, nullable=True)
    actor: str = _col(Text)
    tool_call_id: str | None = _col(Text, nullable=True)
    built_at: datetime = _col(DateTime(timezone=True))
    position: int = _col(BigInteger)


class ContextGraphUsage(SQLModel, table=True):
    """A use of a context graph by a tool call (projected from ``ContextGraphUsed``)."""

    __tablename__ = "context_graph_usage"
    __table_args__ = (
        Index("context_graph_usage_graph", "tenant_id", "project_id", "context_graph_id"),
    )

    tenant_id: str = _tenant()
    project_id: str = _col(Text, pk=True)
    position: int = _col(BigInteger, pk=True)
    context_graph_id: str = _col(Text)
    tool_call_id: str = _col(Text)
    usage_type: str = _col(Text)
    node_ids: list[str] = _col(ARRAY(Text))
    actor: str = _col(Text)
    used_at: datetime = _col(DateTime(timezone=True))


__all__ = [
    "ChainHead",
    "ContextGraph",
    "ContextGraphUsage",
    "Edge",
    "EmbeddingCacheEntry",
    "EmbeddingIndex",
    "Event",
    "EventContent",
    "MerkleLog",
    "MerkleNode",
    "Node",
    "Passage",
    "ProjectionCheckpoint",
    "metadata",
]
