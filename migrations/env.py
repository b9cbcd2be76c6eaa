"""Alembic environment. The URL comes from kg's settings unless the caller put one in the config.

``target_metadata`` is :mod:`kg.models`: ``alembic check`` (run by the test suite) compares it
with a database at head, so the typed models and the migrations cannot drift apart."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool

from kg.db.urls import sqlalchemy_url
from kg.models import metadata as target_metadata


def _url() -> str:
    configured = context.config.get_main_option("sqlalchemy.url")
    if configured:
        return configured
    from kg.config import Settings
    from kg.host.database import database_url

    return sqlalchemy_url(database_url(Settings.from_env()))


def run_migrations_offline() -> None:
    context.configure(
        url=_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = create_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            transaction_per_migration=True,
        )
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
