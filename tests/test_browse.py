"""The graph as a tree of pages (kg.browse): keyset pages that never repeat or skip a node,
policy applied to every listing and page."""

from __future__ import annotations

import pytest

from kg import browse
from kg.errors import PolicyDeniedError, ValidationError
from kg.events import EdgeAsserted, NodeAsserted, PolicyDefined
from kg.policies.model import PolicyRule
from kg.runtime import Runtime


def link(node_id: str, node_type: str, labels: tuple[str, ...]) -> str:
    return f"<{node_id}>"


@pytest.fixture
async def graph(runtime: Runtime) -> Runtime:
    docs = [
        NodeAsserted(node_id=f"document:docs/{i:02}.md", node_type="Document", name=f"Doc {i}",
                     labels=("Document",))
        for i in range(7)
    ]  # fmt: skip
    await runtime.store.append(
        runtime.scope,
        "fixture:browse",
        [
            *docs,
            NodeAsserted(node_id="apiobject:charge", node_type="APIObject", name="Charge",
                         labels=("Entity",)),
            NodeAsserted(node_id="apiobject:secret", node_type="APIObject", name="Secret thing",
                         labels=("Entity",)),
            NodeAsserted(node_id="apiobject:hidden", node_type="APIObject", name="Hidden",
                         labels=("Entity",)),
            EdgeAsserted(edge_type="MENTIONS", from_node="document:docs/00.md",
                         to_node="apiobject:charge", weight=3.0),
            EdgeAsserted(edge_type="MENTIONS", from_node="document:docs/00.md",
                         to_node="apiobject:secret"),
            EdgeAsserted(edge_type="MENTIONS", from_node="document:docs/00.md",
                         to_node="apiobject:hidden"),
            PolicyDefined(policy_id="policy:deny", name="deny",
                          rule=PolicyRule(effect="deny")),
            PolicyDefined(policy_id="policy:redact", name="redact",
                          rule=PolicyRule(effect="redact")),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node="apiobject:secret",
                         to_node="policy:deny"),
            EdgeAsserted(edge_type="GOVERNED_BY", from_node="apiobject:hidden",
                         to_node="policy:redact"),
        ],
    )  # fmt: skip
    return runtime


async def test_pages_cover_every_visible_root_once_and_count_the_denied(graph: Runtime) -> None:
    seen: list[str] = []
    excluded = 0
    cursor = None
    pages = 0
    while True:
        page = await browse.page(graph, cursor, limit=3)
        pages += 1
        seen += [e.node_id for e in page.entries]
        excluded += page.excluded_by_policy
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert pages == 4  # 10 roots, 3 a page
    assert seen == sorted(seen) and len(seen) == len(set(seen))
    assert "apiobject:secret" not in seen and excluded == 1
    assert "apiobject:hidden" in seen and len(seen) == 9


async def test_a_redacted_root_is_listed_without_its_name(graph: Runtime) -> None:
    page = await browse.page(graph)
    hidden = next(e for e in page.entries if e.node_id == "apiobject:hidden")
    assert hidden.redacted and hidden.name != "Hidden"


async def test_a_page_links_what_it_may_and_counts_the_rest(graph: Runtime) -> None:
    text = await browse.render(graph, "document:docs/00.md", link)
    assert "- [Charge](<apiobject:charge>) APIObject (weight 3)" in text
    assert "Secret" not in text and "apiobject:secret" not in text
    assert "Hidden" not in text and "<apiobject:hidden>" in text, "redacted: linked, not named"
    assert "_1 linked node(s) excluded by policy._" in text
    with pytest.raises(PolicyDeniedError):
        await browse.render(graph, "apiobject:secret", link)
    redacted = await browse.render(graph, "apiobject:hidden", link)
    assert "Hidden" not in redacted and "redacted by policy" in redacted


async def test_a_cursor_it_did_not_give_out_is_refused(graph: Runtime) -> None:
    with pytest.raises(ValidationError, match="nextCursor"):
        await browse.page(graph, "not base64 !!")


async def test_a_path_policy_hides_a_document_from_listings(graph: Runtime) -> None:
    """A policy selecting files by path (not by GOVERNED_BY edge) applies to browse listings
    as to every read: the denied document is neither listed nor named, only counted."""
    rule = PolicyRule(effect="deny", paths=("docs/03.md",))
    await graph.store.append(
        graph.scope, "policy:legal", [PolicyDefined(policy_id="policy:legal", name="x", rule=rule)]
    )
    page = await browse.page(graph)

    assert "document:docs/03.md" not in [e.node_id for e in page.entries]
    assert "Doc 3" not in [e.name for e in page.entries]
    assert page.excluded_by_policy == 2  # apiobject:secret and docs/03.md
    completions = await browse.complete_ids(graph, "document:docs/0")
    assert "document:docs/03.md" not in completions and "document:docs/04.md" in completions
