"""``kg://`` resources: the graph browsable by MCP clients that read resources, not only tools.

==============================================  ==========================================
``kg://graph``                                  the tree's root: documents, entities by type,
                                                decisions by day
``kg://documents/{+path}``                      a document and links to its sections
``kg://sections/{+path}/{anchor}``              a section, the entities it names, its links
``kg://entities/{type}/{+name}``                an entity (``kg://entities/apiobject/charge``),
                                                its relationships and the sections naming it
``kg://decisions/{id}``                         a decision and what informed it
``kg://decision-days/{day}``                    the decisions of one UTC day
``kg://nodes/{id}``                             any node by its (percent-encoded) id
==============================================  ==========================================

Every page is Markdown rendered by :mod:`kg.browse`, which applies the project's policies
exactly as the tools do: a denied node is neither listed nor readable nor linked, only counted.
``resources/list`` pages through documents, entities and decisions (``nextCursor``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import date
from typing import TYPE_CHECKING

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.uri_template import UriTemplate
from mcp_types import Resource

from kg import browse
from kg.errors import KgError, NotFoundError
from kg.read.entity_names import ENTITY
from kg.runtime import Runtime
from mcp_server.state import AppState, KgContext, runtime_of

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

ROOT = "kg://graph"
MARKDOWN = "text/markdown"
DOCUMENT = UriTemplate.parse("kg://documents/{+path}")
SECTION = UriTemplate.parse("kg://sections/{+path}/{anchor}")
ENTITY_URI = UriTemplate.parse("kg://entities/{type}/{+name}")
DECISION = UriTemplate.parse("kg://decisions/{id}")
DECISION_DAY = UriTemplate.parse("kg://decision-days/{day}")
NODE = UriTemplate.parse("kg://nodes/{id}")
_RESERVED = re.compile(r"[?#]")


def uri_of(node_id: str, labels: tuple[str, ...] = ()) -> str:
    """The resource URI of a node: the most specific template that can hold its id (reserved
    expansion leaves ``?`` and ``#`` as they are, so an id holding one goes through
    ``kg://nodes/{id}``, which encodes everything)."""
    kind, _, rest = node_id.partition(":")
    if kind == "section" and "#" in rest:
        path, _, anchor = rest.rpartition("#")
        if anchor and "/" not in anchor and not _RESERVED.search(path):
            return SECTION.expand({"path": path, "anchor": anchor})
    elif _RESERVED.search(rest):
        pass
    elif kind == "document":
        return DOCUMENT.expand({"path": rest})
    elif kind == "decision" and "/" not in rest:
        return DECISION.expand({"id": rest})
    elif ENTITY in labels:
        return ENTITY_URI.expand({"type": kind, "name": rest})
    return NODE.expand({"id": node_id})


def _link(node_id: str, node_type: str, labels: tuple[str, ...]) -> str:
    return uri_of(node_id, labels)


def _day_link(day: date) -> str:
    return DECISION_DAY.expand({"day": day.isoformat()})


async def _read(rt: Runtime, node_id: str) -> str:
    try:
        return await browse.render(rt, node_id, _link)
    except NotFoundError as error:
        raise ResourceNotFoundError(str(error)) from None
    except KgError as error:  # denied, invalid: the product's own message
        raise ResourceError(str(error)) from None


def register(server: MCPServer[AppState]) -> None:
    """Add the resource templates to ``server`` (the root and listing are served by
    :class:`~mcp_server.server.KgMCPServer` itself: they need no URI variables)."""

    def template(
        uri: UriTemplate, name: str, description: str
    ) -> Callable[[Callable[..., Awaitable[str]]], Callable[..., Awaitable[str]]]:
        return server.resource(str(uri), name=name, description=description, mime_type=MARKDOWN)

    @template(DOCUMENT, "document", "A Markdown document and links to its sections")
    async def document(path: str, ctx: KgContext) -> str:
        return await _read(runtime_of(ctx), f"document:{path}")

    @template(SECTION, "section", "A section: its text, the entities it names, its links")
    async def section(path: str, anchor: str, ctx: KgContext) -> str:
        return await _read(runtime_of(ctx), f"section:{path}#{anchor}")

    @template(
        ENTITY_URI,
        "entity",
        "An extracted entity (type: apiobject, endpoint, event, concept, ...): its "
        "relationships and the sections that name it",
    )
    async def entity(type: str, name: str, ctx: KgContext) -> str:
        return await _read(runtime_of(ctx), f"{type}:{name}")

    @template(DECISION, "decision", "A recorded decision and what informed it")
    async def decision(id: str, ctx: KgContext) -> str:
        return await _read(runtime_of(ctx), f"decision:{id}")

    @template(DECISION_DAY, "decisions of a day", "The decisions recorded on one UTC day")
    async def decision_day(day: str, ctx: KgContext) -> str:
        try:
            return await browse.decisions_on(runtime_of(ctx), day, _link)
        except KgError as error:
            raise ResourceError(str(error)) from None

    @template(NODE, "node", "Any node by its id, percent-encoded (kg://nodes/requirement%3AFR-1)")
    async def node(id: str, ctx: KgContext) -> str:
        return await _read(runtime_of(ctx), id)


async def root(rt: Runtime) -> str:
    return await browse.root(rt, _link, _day_link)


async def listing(rt: Runtime, cursor: str | None) -> tuple[list[Resource], str | None, int]:
    """One page of ``resources/list``: the root first, then documents, entities, decisions."""
    page = await browse.page(rt, cursor)
    resources = []
    if not cursor:
        resources.append(
            Resource(
                uri=ROOT,
                name="graph",
                title="Knowledge graph",
                description="Documents, entities by type, decisions by day",
                mime_type=MARKDOWN,
            )
        )
    for entry in page.entries:
        resources.append(
            Resource(
                uri=uri_of(entry.node_id, entry.labels),
                name=entry.name,
                title=f"{entry.node_type}: {entry.name}",
                mime_type=MARKDOWN,
            )
        )
    return resources, page.next_cursor, page.excluded_by_policy


async def complete(
    rt: Runtime, template: str, name: str, value: str, given: dict[str, str]
) -> list[str]:
    """Values for one variable of a ``kg://`` template (``completion/complete``): node ids and
    names the caller may see, starting with what was typed so far. ``given`` holds the
    variables already chosen (an entity's ``type``, a section's ``path``)."""
    if template == str(DOCUMENT) and name == "path":
        return [
            i.removeprefix("document:") for i in await browse.complete_ids(rt, f"document:{value}")
        ]
    if template == str(SECTION) and name == "path":
        ids = await browse.complete_ids(rt, f"section:{value}", limit=browse.MAX_COMPLETIONS * 5)
        paths = dict.fromkeys(i.removeprefix("section:").rpartition("#")[0] for i in ids)
        return list(paths)[: browse.MAX_COMPLETIONS]
    if template == str(SECTION) and name == "anchor" and given.get("path"):
        prefix = f"section:{given['path']}#"
        return [i.removeprefix(prefix) for i in await browse.complete_ids(rt, prefix + value)]
    if template == str(ENTITY_URI) and name == "type":
        return [t for t in await browse.entity_types(rt) if t.startswith(value.lower())]
    if template == str(ENTITY_URI) and name == "name":
        kinds = [given["type"]] if given.get("type") else await browse.entity_types(rt)
        found: list[str] = []
        for kind in kinds:
            found += [i.split(":", 1)[1] for i in await browse.complete_ids(rt, f"{kind}:{value}")]
        return found[: browse.MAX_COMPLETIONS]
    if template == str(DECISION) and name == "id":
        return [
            i.removeprefix("decision:") for i in await browse.complete_ids(rt, f"decision:{value}")
        ]
    if template == str(DECISION_DAY) and name == "day":
        return [d for d in await browse.decision_days(rt) if d.startswith(value)]
    if template == str(NODE) and name == "id":
        return await browse.complete_ids(rt, value)
    return []
