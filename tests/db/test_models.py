"""kg.models: typed models of the schema, kept equal to the migrations by ``alembic check``,
and usable as a read API from plain SQLAlchemy/SQLModel sessions."""

from __future__ import annotations

import asyncpg
from alembic import command
from sqlalchemy import create_engine, text
from sqlmodel import Session, select

from kg.config import Scope
from kg.db import migrate
from kg.db.urls import sqlalchemy_url, with_user
from kg.embeddings import HashingEmbedder
from kg.events import EdgeAsserted, EventStore, NodeAsserted
from kg.models import ChainHead, Edge, Event, Node
from kg.projections import ProjectionContext, ProjectionRunner, default_projections


def test_the_models_and_the_migrations_describe_the_same_schema(db_url: str) -> None:
    """``alembic check`` autogenerates a migration from kg.models against a database at head
    and fails if it would contain any operation."""
    command.check(migrate.alembic_config(db_url))


async def test_read_the_graph_with_sqlmodel_under_row_level_security(
    db_url: str, store: EventStore, system_pool: asyncpg.Pool, scope: Scope
) -> None:
    runner = ProjectionRunner(
        system_pool, default_projections(), ProjectionContext(HashingEmbedder())
    )
    await store.append(
        scope,
        "s",
        [
            NodeAsserted(node_id="decision:d1", node_type="Decision", name="Use PostgreSQL"),
            NodeAsserted(node_id="component:db", node_type="Component", name="Database"),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node="component:db", to_node="decision:d1"),
        ],
    )
    await store.append(
        Scope("other", "p"),
        "s",
        [NodeAsserted(node_id="decision:x", node_type="Decision", name="X")],
    )
    await runner.catch_up()
    # As the application role (the fixture DB's kg_app logs in without a password).
    engine = create_engine(sqlalchemy_url(with_user(db_url, "kg_app", None)))
    try:
        with Session(engine) as session:
            set_tenant = text("SELECT set_config('kg.tenant_id', :t, true)")
            session.connection().execute(set_tenant, {"t": scope.tenant_id})
            decisions = session.exec(select(Node).where(Node.node_type == "Decision")).all()
            assert [(n.tenant_id, n.node_id, n.name) for n in decisions] == [
                ("acme", "decision:d1", "Use PostgreSQL")
            ]
            (edge,) = session.exec(select(Edge)).all()
            assert (edge.from_node, edge.edge_type, edge.to_node) == (
                "component:db",
                "GOVERNED_BY",
                "decision:d1",
            )
            head = session.exec(select(ChainHead)).one()
            assert (head.tenant_id, head.position) == ("acme", 3)
            events = session.exec(select(Event).order_by(Event.position)).all()  # type: ignore[arg-type]
            assert [e.position for e in events] == [1, 2, 3]
            assert events[-1].hash == head.hash
    finally:
        engine.dispose()
