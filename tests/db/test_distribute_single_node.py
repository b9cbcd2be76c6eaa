"""``kg db distribute`` where there is no Citus: a clear error naming what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from kg.db.distribute import DistributeError, distribute
from tests.support import cli_env, kg


def test_distribute_without_citus_says_a_coordinator_is_needed(db_url: str) -> None:
    with pytest.raises(DistributeError) as refused:
        distribute(db_url)
    assert "needs a Citus coordinator" in str(refused.value)
    assert "shared_preload_libraries" in str(refused.value)


def test_the_cli_refuses_the_embedded_database(tmp_path: Path, db_url: str) -> None:
    env = {k: v for k, v in cli_env(db_url).items() if k != "KG_DATABASE_URL"}
    out = kg("db", "distribute", env=env, cwd=tmp_path)
    assert out.returncode == 2
    assert "needs a Citus coordinator: set KG_DATABASE_URL" in out.stderr
    via_url = kg("db", "distribute", env=cli_env(db_url), cwd=tmp_path)
    assert via_url.returncode == 1
    assert "kg db distribute needs a Citus coordinator" in via_url.stderr
