"""Browsing the graph as a tree of Markdown pages: documents -> sections -> entities, and
decisions by day. The MCP server serves these as ``kg://`` resources (:mod:`mcp_server.resources`);
this module knows nothing of URIs: the caller passes ``link`` to turn a node id into one.

Policy-checked like every read (:mod:`kg.policies`): a denied node is never listed, linked,
rendered or named, only counted; a redacted one shows its id and type only.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date

from kg.breadcrumbs import breadcrumb
from kg.errors import ValidationError
from kg.policies.evaluate import Governance
from kg.policies.model import REDACTED_NAME
from kg.projections.browse_reader import BrowseReader
from kg.projections.graph_reader import EdgeRow, NodeRow
from kg.read.governed import Admitted, Governed
from kg.runtime import Runtime
from kg.validation import clip

# (node id, node type, labels) -> where a page links to for that node
Link = Callable[[str, str, tuple[str, ...]], str]
PAGE_SIZE = 200
MAX_LINKS = 200  # edges listed on one page, strongest first
_STRUCTURE = frozenset({"CONTAINS", "PARENT_OF"})


@dataclass(frozen=True, slots=True)
class Entry:
    node_id: str
    node_type: str
    labels: tuple[str, ...]
    name: str
    redacted: bool


@dataclass(frozen=True, slots=True)
class Page:
    entries: list[Entry]
    next_cursor: str | None
    excluded_by_policy: int


@asynccontextmanager
async def _readers(rt: Runtime) -> AsyncIterator[tuple[Governed, BrowseReader, Governance]]:
    """One snapshot of the read model (caught up): its policy-checked view, the browsing
    queries on the same transaction, and the view's governance for the rows they return."""
    async with rt.reader().snapshot() as snap:
        governed = await snap.governed()
        yield governed, BrowseReader(snap.conn, snap.scope), governed.governance


def _cursor(node_id: str) -> str:
    return base64.urlsafe_b64encode(node_id.encode()).decode()


def _after(cursor: str | None) -> str:
    if not cursor:
        return ""
    try:
        return base64.urlsafe_b64decode(cursor.encode()).decode()
    except (ValueError, UnicodeDecodeError):
        raise ValidationError(
            f"cursor {clip(cursor)} is not one this server gave out: pass the nextCursor of "
            "the previous page, or none for the first"
        ) from None


async def page(rt: Runtime, cursor: str | None = None, limit: int = PAGE_SIZE) -> Page:
    """One page of the browsable roots (documents, entities, decisions) in node id order."""
    async with _readers(rt) as (_, browse, gov):
        rows = await browse.page(_after(cursor), limit)
    entries = []
    for row in rows:
        verdict = gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
        if not verdict.denied:
            name = REDACTED_NAME if verdict.redacted else row.name
            entries.append(Entry(row.node_id, row.node_type, row.labels, name, verdict.redacted))
    more = _cursor(rows[-1].node_id) if len(rows) == limit else None
    return Page(entries, more, gov.excluded_nodes)


async def root(rt: Runtime, link: Link, day_link: Callable[[date], str]) -> str:
    """The top of the tree: documents, entities by type, decisions by day."""
    docs: list[Entry] = []
    entities: dict[str, list[Entry]] = {}
    days: dict[date, int] = {}
    excluded = 0
    cursor: str | None = None
    while True:
        got = await page(rt, cursor)
        excluded += got.excluded_by_policy
        for entry in got.entries:
            if entry.node_id.startswith("document:"):
                docs.append(entry)
            elif entry.node_type != "Decision":
                entities.setdefault(entry.node_type, []).append(entry)
        if got.next_cursor is None:
            break
        cursor = got.next_cursor
    async with _readers(rt) as (_, browse, gov):
        for row, day in await browse.decisions(None, 10_000):
            # verdict, not admit: page() above counted the denied ones already
            if not gov.verdict(row.node_type, row.labels, row.governed_by, row.node_id).denied:
                days[day] = days.get(day, 0) + 1
    lines = ["# Knowledge graph", "", f"## Documents ({len(docs)})", ""]
    lines += [f"- [{e.name}]({link(e.node_id, e.node_type, e.labels)})" for e in docs]
    for node_type in sorted(entities):
        group = entities[node_type]
        lines += ["", f"## {node_type} ({len(group)})", ""]
        lines += [f"- [{e.name}]({link(e.node_id, e.node_type, e.labels)})" for e in group]
    lines += ["", f"## Decisions by day ({sum(days.values())})", ""]
    lines += [
        f"- [{d.isoformat()}]({day_link(d)}): {n}" for d, n in sorted(days.items(), reverse=True)
    ]
    if excluded:
        lines += ["", f"_{excluded} node(s) excluded by policy._"]
    return "\n".join(lines) + "\n"


async def decisions_on(rt: Runtime, day: str, link: Link) -> str:
    """The decisions recorded on one UTC day (``YYYY-MM-DD``), newest first."""
    try:
        when = date.fromisoformat(day)
    except ValueError:
        raise ValidationError(f"day {clip(day)} is not a date: use YYYY-MM-DD") from None
    async with _readers(rt) as (_, browse, gov):
        rows = await browse.decisions(when, 10_000)
        lines = [f"# Decisions on {when.isoformat()}", ""]
        for row, _ in rows:
            verdict = gov.admit(row.node_type, row.labels, row.governed_by, row.node_id)
            if verdict.denied:
                continue
            name = REDACTED_NAME if verdict.redacted else row.name
            lines.append(f"- [{name}]({link(row.node_id, row.node_type, row.labels)})")
        if gov.excluded_nodes:
            lines += ["", f"_{gov.excluded_nodes} decision(s) excluded by policy._"]
    return "\n".join(lines) + "\n"


async def render(rt: Runtime, node_id: str, link: Link) -> str:
    """One node as a Markdown page: what it is, its content, and links to its children
    (a document's sections), the entities it names, and every other edge, strongest first.

    Raises:
        NotFoundError: no such node in this project.
        PolicyDeniedError: a policy denies it (the message names only the id asked for).
    """
    async with _readers(rt) as (governed, browse, _):
        node = await governed.start(node_id)
        row = node.row
        if node.redacted:
            return f"# {REDACTED_NAME}\n\n`{row.node_id}` ({row.node_type}): redacted by policy.\n"
        contained = {a.node_id: a for a in await governed.nodes(
            [c.node_id for c in await browse.contained(row.node_id, MAX_LINKS)]
        )}  # fmt: skip
        children = [contained[c] for c in sorted(contained, key=list(contained).index)]
        around = await governed.neighbours([row.node_id], exclude=[row.node_id], limit=MAX_LINKS)
        lines = _heading(row)
        if children:
            lines += ["", "## Sections", "", *_linked(children, link)]
        lines += _edges(row.node_id, around, link, set(contained))
        if governed.excluded:
            lines += ["", f"_{governed.excluded} linked node(s) excluded by policy._"]
    return "\n".join(lines) + "\n"


def _heading(row: NodeRow) -> list[str]:
    title = breadcrumb(row.node_id, row.name, row.properties) or row.name
    lines = [f"# {title}", "", f"`{row.node_id}` ({row.node_type})"]
    if row.content:
        lines += ["", row.content]
    return lines


def _name(node: Admitted) -> str:
    return REDACTED_NAME if node.redacted else node.row.name


def _linked(nodes: list[Admitted], link: Link) -> list[str]:
    return [f"- [{_name(a)}]({link(a.node_id, a.row.node_type, a.row.labels)})" for a in nodes]


def _edges(
    node_id: str, around: list[tuple[EdgeRow, Admitted]], link: Link, skip: set[str]
) -> list[str]:
    groups: dict[str, list[str]] = {}
    for edge, other in around:
        if other.node_id in skip and edge.edge_type in _STRUCTURE:
            continue
        label = edge.edge_type if edge.from_node == node_id else f"{edge.edge_type} (from)"
        weight = f" (weight {edge.weight:g})" if edge.weight != 1.0 else ""
        row = other.row
        groups.setdefault(label, []).append(
            f"- [{_name(other)}]({link(row.node_id, row.node_type, row.labels)}) {row.node_type}"
            f"{weight}"
        )
    lines: list[str] = []
    for label in sorted(groups):
        lines += ["", f"## {label}", "", *groups[label]]
    return lines


MAX_COMPLETIONS = 100


async def complete_ids(rt: Runtime, prefix: str, *, limit: int = MAX_COMPLETIONS) -> list[str]:
    """Node ids starting with ``prefix`` that policy lets this caller see, in id order
    (completion of ``kg://`` URI variables). A denied node is never offered."""
    async with _readers(rt) as (_, browse, gov):
        rows = await browse.prefixed(prefix, limit * 2)
    visible = [
        r for r in rows if not gov.verdict(r.node_type, r.labels, r.governed_by, r.node_id).denied
    ]
    return [r.node_id for r in visible[:limit]]


async def decision_days(rt: Runtime) -> list[str]:
    """The UTC days (``YYYY-MM-DD``, newest first) on which visible decisions were recorded."""
    async with _readers(rt) as (_, browse, gov):
        rows = await browse.decisions(None, 10_000)
    days = {
        day.isoformat()
        for row, day in rows
        if not gov.verdict(row.node_type, row.labels, row.governed_by, row.node_id).denied
    }
    return sorted(days, reverse=True)


async def entity_types(rt: Runtime) -> list[str]:
    """The id prefixes of extracted entity types (``apiobject``, ``endpoint``, ...)."""
    async with _readers(rt) as (_, browse, _gov):
        return await browse.entity_prefixes()
