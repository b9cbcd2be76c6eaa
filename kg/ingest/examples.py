"""The example project under ``examples/`` (the specs of kg itself), as ``kg demo`` uses it.

It is ingested into a scope of its own (tenant ``examples``, project ``kg``) with
``examples/`` as its project root, so its ids read ``document:docs/prd.md`` and it never mixes
with the specs of the project the demo runs in.
"""

from __future__ import annotations

from pathlib import Path

import kg
from kg.config import Scope

EXAMPLES_SCOPE = Scope("examples", "kg")
# ``examples/api``: an API reference whose schema map (``kg-schema.yaml``) extracts entities.
API_SCOPE = Scope("examples", "api")


def examples_root() -> Path | None:
    """``examples/`` next to the ``kg`` package (a source checkout or editable install)."""
    root = Path(kg.__file__).resolve().parent.parent / "examples"
    return root if (root / "docs").is_dir() else None


def api_example_root() -> Path | None:
    """``examples/api``, the API example, when the examples are there."""
    root = examples_root()
    return root / "api" if root is not None and (root / "api" / "docs").is_dir() else None
