"""Who may run which tool on which nodes: the gating rule of ``kg.policies.actions``, on plain
values (the database-backed enforcement is tested through the MCP client)."""

from __future__ import annotations

from kg.events import EventMetadata, PolicyDefined
from kg.events.policy import PolicyRule
from kg.governance.enforce import check
from kg.policies.actions import Subject, authorize
from kg.policies.model import Policy
from kg.runtime import Runtime

LEGAL = Subject("section:docs/legal/nda.md#terms", "Section", ("section",))
PRD = Subject("document:docs/prd.md", "Document", ("document",))


def policies(*items: Policy) -> dict[str, Policy]:
    return {p.policy_id: p for p in items}


def policy(policy_id: str, **rule: object) -> Policy:
    return Policy(policy_id, policy_id, PolicyRule.model_validate(rule), "webshop")


LEGAL_TEAM = policy(
    "policy:legal-team",
    effect="allow_actions",
    paths=("docs/legal/**",),
    actions=("read", "record_decision"),
    actors=("cli:*", "mcp:legal-*"),
)
DEFAULT = policy(
    "policy:default", effect="allow_actions", scope="project", actions=("read",), actors=("*",)
)


def test_without_gating_policies_everything_is_allowed() -> None:
    informative = policy("policy:info", effect="allow_actions", scope="project", actions=("edit",))
    assert authorize(policies(informative), "mcp:x", "record_decision", [LEGAL]) is None


def test_a_gating_policy_lets_only_its_actors_act_on_what_it_governs() -> None:
    gated = policies(LEGAL_TEAM)

    assert authorize(gated, "mcp:legal-bot", "record_decision", [LEGAL]) is None
    assert authorize(gated, "cli:ada", "get_node", [LEGAL]) is None  # read covers get_node
    refused = authorize(gated, "mcp:claude", "record_decision", [LEGAL, PRD])
    assert refused is not None
    assert refused.policy_ids == ("policy:legal-team",) and refused.refused_ids == (LEGAL.node_id,)
    assert "mcp:claude may not run record_decision on 1 of the nodes involved" in refused.message()
    # Nodes it does not govern stay open, and so does an action naming no node.
    assert authorize(gated, "mcp:claude", "record_decision", [PRD]) is None
    assert authorize(gated, "mcp:claude", "record_decision", []) is None


def test_deny_writes_by_default_needs_a_grant_for_every_write() -> None:
    gated = policies(DEFAULT, LEGAL_TEAM)

    assert authorize(gated, "mcp:claude", "query_knowledge_graph", []) is None
    refused = authorize(gated, "mcp:claude", "record_decision", [])
    assert refused is not None and refused.policy_ids == ("policy:default",)
    assert "in this project (the call names no node)" in refused.message()
    assert authorize(gated, "mcp:claude", "ingest_markdown", [PRD]) is not None
    # A grant on the nodes involved is enough.
    assert authorize(gated, "cli:ada", "record_decision", [LEGAL]) is None
    # The policy selecting a node decides for it, not the project default: legal narrows it.
    assert authorize(gated, "mcp:claude", "get_node", [PRD]) is None
    refused = authorize(gated, "mcp:claude", "get_node", [LEGAL])
    assert refused is not None and refused.policy_ids == ("policy:legal-team",)
    writers = policy(
        "policy:writers", effect="allow_actions", scope="project", actions=("write",),
        actors=("mcp:claude",),
    )  # fmt: skip
    assert authorize(policies(DEFAULT, writers), "mcp:claude", "ingest_markdown", [PRD]) is None


async def test_the_guard_leaves_ids_that_cannot_be_nodes_to_the_tools_own_validation(
    shop: Runtime,
) -> None:
    await shop.store.append(
        shop.scope,
        "policies",
        [PolicyDefined(policy_id="policy:team", name="team", rule=LEGAL_TEAM.rule)],
        metadata=EventMetadata(actor="pytest"),
    )

    assert await check(shop, "mcp:x", "get_node", ["a\x00b", "x" * 5000, "\ud800"]) is None
    refused = await check(shop, "mcp:x", "get_node", ["section:docs/legal/a.md#b", "a\x00b"])
    assert refused is not None and refused.refused_ids == ("section:docs/legal/a.md#b",)


async def test_the_guard_decides_a_node_named_by_its_path_as_that_node(runtime: Runtime) -> None:
    """Issue 30 item 7: tools take paths and names; the guard resolves them the same way, so
    a gated section named ``docs/legal/nda.md#terms`` is refused like its id."""
    from kg.ingest.service import ingest_paths

    legal = runtime.settings.project_root / "docs" / "legal" / "nda.md"
    legal.parent.mkdir(parents=True)
    legal.write_text("# NDA\n\n## Terms\n\nConfidential for five years.\n")
    await ingest_paths(runtime, None)
    await runtime.store.append(
        runtime.scope,
        "policies",
        [PolicyDefined(policy_id="policy:team", name="team", rule=LEGAL_TEAM.rule)],
        metadata=EventMetadata(actor="pytest"),
    )

    for name, node_id in [
        ("docs/legal/nda.md#terms", "section:docs/legal/nda.md#terms"),
        ("docs/legal/nda.md", "document:docs/legal/nda.md"),
    ]:
        refused = await check(runtime, "mcp:x", "get_node", [name])
        assert refused is not None and refused.refused_ids == (node_id,), name
        assert await check(runtime, "mcp:legal-bot", "get_node", [name]) is None
