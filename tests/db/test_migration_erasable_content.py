"""Migration 0014 (erasable content): a downgrade that would lose content kept beside the log
is refused; a downgrade to base (which drops the log anyway) is not."""

from __future__ import annotations

import pytest

from kg.config import Scope
from kg.db import migrate
from kg.db.connect import create_pool
from kg.events import EventStore, NodeAsserted


async def test_downgrade_below_0014_keeps_content_or_refuses(empty_db_url: str) -> None:
    migrate.upgrade(empty_db_url)
    app = await create_pool(empty_db_url, app_role=True, max_size=1)
    try:
        await EventStore(app).append(
            Scope("acme", "p"),
            "s",
            [NodeAsserted(node_id="component:a", node_type="Component", name="A", content="x")],
        )
    finally:
        await app.close()
    with pytest.raises(Exception, match="cannot downgrade below 0014"):
        migrate.downgrade(empty_db_url, "0013")
    assert migrate.current_revision(empty_db_url) == "0014"
    migrate.downgrade(empty_db_url, "base")
    assert migrate.current_revision(empty_db_url) is None
