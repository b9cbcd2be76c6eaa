"""The same hostile values at the application functions the CLI calls (no MCP schema in
front): each is a typed ValidationError/NotFoundError naming the argument, never an asyncpg
error, and never repeating more than a clipped part of the value."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kg import decisions, graph_queries, lineage
from kg.context import service
from kg.errors import KgError, NotFoundError, ValidationError
from kg.runtime import Runtime

HUGE = "y" * 10_000_000
LONG_ID = "component:" + "z" * 1000  # a valid id length, not in the graph
Call = Callable[[Runtime], Awaitable[Any]]

CASES: list[tuple[str, Call, type[KgError], str]] = [
    ("query NUL", lambda rt: graph_queries.query_knowledge_graph(rt, "a\x00b"), ValidationError,
     "text contains a NUL character"),
    ("query surrogate", lambda rt: graph_queries.query_knowledge_graph(rt, "a\ud800"),
     ValidationError, "text contains a lone UTF-16 surrogate"),
    ("query 10 MB", lambda rt: graph_queries.query_knowledge_graph(rt, HUGE), ValidationError,
     "text is 10,000,000 characters long; the limit is 4,000"),
    ("neighbours 10 MB id", lambda rt: graph_queries.get_entity_neighbors(rt, HUGE),
     ValidationError, "node_id is 10,000,000 characters long"),
    ("neighbours long id", lambda rt: graph_queries.get_entity_neighbors(rt, LONG_ID),
     NotFoundError, "… (1,010 characters) not found"),
    ("path NUL", lambda rt: graph_queries.find_path(rt, "component:checkout", "x\x00"),
     ValidationError, "target contains a NUL"),
    ("lineage NUL", lambda rt: lineage.trace_decision_lineage(rt, "d\x00"), ValidationError,
     "decision_id contains a NUL"),
    ("lineage long id", lambda rt: lineage.trace_decision_lineage(rt, "d" * 1000),
     NotFoundError, "characters) not found"),
    ("context NUL anchor", lambda rt: service.build_context_graph(
        rt, service.parse_request(anchors=("a\x00",))), ValidationError, "anchors.0"),
    ("context surrogate task", lambda rt: service.build_context_graph(
        rt, service.parse_request(task="t\ud800", mode="semantic")), ValidationError, "task"),
    ("usage 10 MB id", lambda rt: service.record_context_usage(rt, HUGE, "call-1"),
     ValidationError, "context_graph_id is 10,000,000 characters long"),
    ("decision NUL text", lambda rt: decisions.record_decision(rt, text="a\x00"),
     ValidationError, "text contains a NUL"),
    ("decision many refs", lambda rt: decisions.record_decision(
        rt, text="x", references=[f"component:gone-{i}" for i in range(500)]), NotFoundError,
     "and 495 more"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "error", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
async def test_a_hostile_value_is_a_clear_bounded_error(
    call: Call, error: type[KgError], expected: str, shop: Runtime
) -> None:
    with pytest.raises(error) as raised:
        await call(shop)
    message = str(raised.value)
    assert expected in message, message
    assert len(message) < 1000, f"{len(message)} characters"
    assert "VAULT" not in message
