"""``kg audit trail``: a decision's, a session's, an actor's or a time window's events in log
order, with who, what, when and why; JSON Lines, CSV and Markdown that parse back."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from kg.audit.trail import COLUMNS, TrailEntry, TrailFilter, trail
from kg.audit.trail_format import render_trail
from kg.config import Scope
from kg.context.service import build_context_graph, parse_request, record_context_usage
from kg.decisions import RecordedDecision, record_decision
from kg.errors import NotFoundError, ValidationError
from kg.events import EventMetadata, NodeAsserted
from kg.runtime import Runtime
from tests.support import cli_env, kg

TEXT = "Charge | then ship\nnot the other way"


@dataclass
class Story:
    decision: RecordedDecision
    graph_id: str
    later: RecordedDecision


@pytest.fixture
async def story(shop: Runtime, scope: Scope) -> Story:
    graph = await build_context_graph(
        shop,
        parse_request(anchors=["component:checkout"], session_id="s-1"),
        EventMetadata(actor="agent-7", session_id="s-1"),
    )
    await record_context_usage(
        shop,
        graph.context_graph_id,
        "call-1",
        "read",
        ["component:checkout"],
        EventMetadata(actor="agent-7", session_id="s-1", tool_call_id="call-1"),
    )
    decision = await record_decision(
        shop,
        text=TEXT,
        rationale="Refunds are cheaper than chargebacks",
        context_graph_ids=[graph.context_graph_id],
        metadata=EventMetadata(actor="agent-7", session_id="s-1"),
    )
    await shop.store.append(
        scope, "noise", [NodeAsserted(node_id="file:x", node_type="File", name="x")]
    )
    later = await record_decision(
        shop,
        text="Ship first for digital goods",
        supersedes=[decision.node_id],
        metadata=EventMetadata(actor="bob"),
    )
    return Story(decision, graph.context_graph_id, later)


async def collect(entries: AsyncIterator[TrailEntry]) -> list[TrailEntry]:
    return [e async for e in entries]


async def test_a_decision_trail_has_what_informed_it_and_what_superseded_it(
    shop: Runtime, scope: Scope, story: Story
) -> None:
    entries = await collect(
        trail(shop.app_pool, scope, TrailFilter(decision=story.decision.decision_id))
    )
    assert [e.event_type for e in entries] == [
        "ContextGraphBuilt",
        "ContextGraphUsed",
        "DecisionRecorded",
        "DecisionRecorded",
    ]
    assert [e.position for e in entries] == sorted(e.position for e in entries)
    built, used, decided, superseding = entries
    assert built.actor == "agent-7" and built.session_id == "s-1"
    assert "anchors=" in built.why and built.subject == f"context_graph:{story.graph_id}"
    assert "call-1" in used.what and "component:checkout" in used.why
    assert decided.subject == story.decision.node_id and decided.actor == "agent-7"
    assert decided.why.startswith("Refunds are cheaper than chargebacks")
    assert superseding.actor == "bob" and superseding.subject == story.later.node_id


async def test_session_actor_and_time_window_trails(
    shop: Runtime, scope: Scope, story: Story
) -> None:
    session = await collect(trail(shop.app_pool, scope, TrailFilter(session="s-1")))
    assert [e.event_type for e in session] == [
        "ContextGraphBuilt",
        "ContextGraphUsed",
        "DecisionRecorded",
    ]
    bob = await collect(trail(shop.app_pool, scope, TrailFilter(actor="bob")))
    assert [e.subject for e in bob] == [story.later.node_id]
    since = session[1].recorded_at
    window = await collect(
        trail(
            shop.app_pool,
            scope,
            TrailFilter(since=_time(since), until=_time(session[2].recorded_at)),
        )
    )
    assert [e.position for e in window] == [session[1].position, session[2].position]
    everything = await collect(trail(shop.app_pool, scope, TrailFilter()))
    assert [e.position for e in everything] == sorted(e.position for e in everything)
    assert {e.position for e in window} < {e.position for e in everything}
    assert len(everything) == await shop.store.count(scope), "no filter: the whole trail"
    with pytest.raises(NotFoundError, match="no events about decision"):
        await collect(trail(shop.app_pool, scope, TrailFilter(decision="nope")))
    other = await collect(trail(shop.app_pool, Scope("other", "p"), TrailFilter(actor="bob")))
    assert other == [], "another tenant's trail is its own"


async def test_a_trail_of_some_event_types(
    shop: Runtime, scope: Scope, story: Story, db_url: str, tmp_path: Path
) -> None:
    """Issue 30 item 10: `kg audit trail` had no event-type filter."""
    decided = await collect(
        trail(shop.app_pool, scope, TrailFilter(event_types=("DecisionRecorded",)))
    )
    assert decided and {e.event_type for e in decided} == {"DecisionRecorded"}
    both = ("DecisionRecorded", "ContextGraphUsed")
    mixed = await collect(trail(shop.app_pool, scope, TrailFilter(session="s-1", event_types=both)))
    assert [e.event_type for e in mixed] == ["ContextGraphUsed", "DecisionRecorded"]
    with pytest.raises(ValidationError, match="--type DecisionMade: no such event type"):
        await collect(trail(shop.app_pool, scope, TrailFilter(event_types=("DecisionMade",))))

    out = kg("audit", "trail", "--type", "DecisionRecorded", env=cli_env(db_url), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines and {e["event_type"] for e in lines} == {"DecisionRecorded"}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text)


async def test_the_three_formats_parse_back_to_the_same_events(
    shop: Runtime, scope: Scope, story: Story
) -> None:
    selection = TrailFilter(decision=story.decision.decision_id)
    expected = await collect(trail(shop.app_pool, scope, selection))

    jsonl = await render_trail(trail(shop.app_pool, scope, selection), "jsonl")
    records = [json.loads(line) for line in jsonl.splitlines()]
    assert [r["position"] for r in records] == [e.position for e in expected]
    assert records[2]["payload"]["text"] == TEXT and records[2]["actor"] == "agent-7"

    text = await render_trail(trail(shop.app_pool, scope, selection), "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert tuple(rows[0]) == COLUMNS
    assert [int(r["position"]) for r in rows] == [e.position for e in expected]
    assert rows[2]["what"] == expected[2].what and "|" in rows[2]["what"]
    assert rows[2]["hash"] == expected[2].hash

    md = await render_trail(trail(shop.app_pool, scope, selection), "md")
    lines = md.splitlines()
    assert re.fullmatch(r"\|(---\|)+", lines[1])
    table = [
        [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        for line in (lines[0], *lines[2:])
    ]
    header, body = table[0], table[1:]
    assert all(len(row) == len(header) for row in body), "escaped pipes keep the columns"
    assert [int(row[0]) for row in body] == [e.position for e in expected]
    assert body[2][header.index("what")] == " ".join(expected[2].what.split())


async def test_backfilled_events_carry_their_source_in_the_trail(
    runtime: Runtime, scope: Scope
) -> None:
    await runtime.store.append(
        scope,
        "backfill:org.db/decisions",
        [NodeAsserted(node_id="decision:org-1", node_type="Decision", name="legacy")],
        metadata=EventMetadata(actor="kg backfill", source="org.db/decisions#1"),
    )
    (entry,) = await collect(trail(runtime.app_pool, scope, TrailFilter(decision="org-1")))
    assert entry.source == "org.db/decisions#1" and entry.actor == "kg backfill"
