"""Database URL helpers: one URL in, the right form for each driver out, passwords never shown."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def redact(url: str) -> str:
    """The URL with its password replaced by ``***`` (safe to print and log)."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _with_scheme(url: str, scheme: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in {"postgres", "postgresql", "postgresql+psycopg", "postgresql+asyncpg"}:
        from kg.errors import ConfigurationError

        raise ConfigurationError(
            f"database URL {redact(url)!r} is not a PostgreSQL URL: "
            "use postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        )
    return urlunsplit(parts._replace(scheme=scheme))


def asyncpg_url(url: str) -> str:
    return _with_scheme(url, "postgresql")


def sqlalchemy_url(url: str) -> str:
    """The URL for SQLAlchemy/Alembic on the psycopg (v3) driver."""
    return _with_scheme(url, "postgresql+psycopg")


def with_database(url: str, database: str) -> str:
    """The same server, another database."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{database}"))


def with_user(url: str, user: str, password: str | None = None) -> str:
    """The same server and database, logged in as ``user`` (with ``password`` if given)."""
    from urllib.parse import quote

    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    credentials = quote(user, safe="")
    if password:
        credentials += ":" + quote(password, safe="")
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}"))
