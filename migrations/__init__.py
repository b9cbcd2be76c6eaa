"""Alembic environment: the only way the schema changes."""
