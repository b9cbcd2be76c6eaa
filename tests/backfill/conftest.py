"""A generated legacy org.db and sessions.db, shared by the backfill tests (never modified:
the backfill opens them read-only)."""

from __future__ import annotations

import pytest

from backfill.generate import GeneratedLegacy, generate


@pytest.fixture(scope="session")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> GeneratedLegacy:
    return generate(tmp_path_factory.mktemp("legacy"), rows=3000, seed=11)
