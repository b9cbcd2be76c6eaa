"""Bring a database to the head revision (or back to base) with Alembic."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, exc, pool

import migrations
from kg.db.urls import sqlalchemy_url

MIGRATIONS_DIR = Path(migrations.__file__).resolve().parent


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", sqlalchemy_url(url).replace("%", "%%"))
    return cfg


@contextmanager
def _reachable(url: str) -> Iterator[None]:
    """Turn a driver's connection failure into an actionable, password-free error."""
    try:
        yield
    except exc.OperationalError as error:
        from kg.db.connect import unreachable

        raise unreachable(url, error.orig or error) from None


def upgrade(url: str, revision: str = "head") -> None:
    from kg.db.distribute import refuse_migration_if_distributed

    with _reachable(url):
        refuse_migration_if_distributed(url, pending_revisions(url, revision))
        command.upgrade(alembic_config(url), revision)


def pending_revisions(url: str, revision: str = "head") -> list[str]:
    """The revisions an upgrade of ``url`` to ``revision`` would run, oldest first."""
    script = ScriptDirectory.from_config(alembic_config(url))
    current = current_revision(url)
    target = script.get_revision(revision)
    if target is None:
        return []
    return [
        r.revision
        for r in reversed(list(script.iterate_revisions(target.revision, current)))
        if r.revision != current
    ]


def downgrade(url: str, revision: str = "base") -> None:
    from kg.db.distribute import refuse_migration_if_distributed

    with _reachable(url):
        current = current_revision(url)
        if current is not None and current != revision:
            refuse_migration_if_distributed(url, [f"downgrade {current} -> {revision}"])
        command.downgrade(alembic_config(url), revision)


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config("postgresql://unused/db")).get_current_head()
    assert head is not None
    return head


def current_revision(url: str) -> str | None:
    engine = create_engine(sqlalchemy_url(url), poolclass=pool.NullPool)
    try:
        with _reachable(url), engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
