"""The append function takes the new head's hash into a variable before its ``UPDATE``.

Why: on a Citus cluster (``kg db distribute``) the append runs on the tenant's worker, delegated
by the coordinator, and there the statement
``UPDATE kg_chain_heads SET ..., hash = p_hashes[v_count], ...`` (a subscript of a PL/pgSQL
array parameter in the ``SET`` list of a distributed table's ``UPDATE``) crashed the worker's
backend (signal 11, Citus 14.0.1 on PostgreSQL 18; the same statement with a scalar variable
runs). The function is otherwise 0016's, and does the same on one node.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-29
"""

from __future__ import annotations

import importlib
from types import ModuleType

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_SUBSCRIPT = "hash = p_hashes[v_count],"
_VARIABLE = "hash = v_hash,"


def _m16() -> ModuleType:
    return importlib.import_module("migrations.versions.0016_frontier_in_chain_head")


def append_sql(schema: str) -> str:
    text = str(_m16().append_sql(schema))
    assert text.count(_SUBSCRIPT) == 1 and text.count("    v_border bytea[];\n") == 1
    text = text.replace(_SUBSCRIPT, _VARIABLE)
    text = text.replace("    v_border bytea[];\n", "    v_border bytea[];\n    v_hash text;\n")
    return text.replace(
        "    UPDATE kg_chain_heads SET position",
        "    v_hash := p_hashes[v_count];\n    UPDATE kg_chain_heads SET position",
    )


def upgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(append_sql(schema))


def downgrade() -> None:
    schema = str(op.get_bind().exec_driver_sql("SELECT current_schema()").scalar_one())
    op.execute(_m16().append_sql(schema))
