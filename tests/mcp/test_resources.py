"""``kg://`` resources through the SDK's real client, over stdio and streamable HTTP: the graph
browsed as a tree (documents -> sections -> entities; decisions by day), policy-checked like
the tools."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import ResourceTemplateReference, TextResourceContents

from kg.events import EdgeAsserted, PolicyDefined
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.runtime import Runtime
from mcp_server.resources import NODE, uri_of
from tests.mcp.client import call, http_server, http_session, ok, server_env, stdio_session

FILES = {
    ".kg/schema.yaml": (
        "entities:\n  presets: [endpoints, events, bold_terms, relationships, glossary]\n"
        "  bold_terms: APIObject\n"
    ),
    "docs/api/charges.md": (
        "# Charges\n\n## Create a charge\n\n`POST /v1/charges` returns a **Charge**. "
        "A **Charge** requires a **Customer**.\n"
    ),
    "docs/secret.md": "# Vault\n\nThe VAULT-SECRET **Vault Key** lives here.\n",
}


@pytest.fixture
async def browsable(runtime: Runtime, tmp_path: Path) -> Runtime:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    await ingest_paths(runtime, [tmp_path / "docs"])
    await runtime.store.append(
        runtime.scope,
        "policies",
        [
            PolicyDefined(
                policy_id="policy:vault",
                name="The vault is off limits",
                rule=PolicyRule(effect="deny"),
            ),
            EdgeAsserted(
                edge_type="GOVERNED_BY", from_node="document:docs/secret.md", to_node="policy:vault"
            ),
            EdgeAsserted(
                edge_type="GOVERNED_BY", from_node="apiobject:vault key", to_node="policy:vault"
            ),
        ],
    )
    return runtime


async def read(session: ClientSession, uri: str) -> str:
    result = await session.read_resource(uri)
    content = result.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "text/markdown"
    return content.text


async def test_browse_documents_sections_and_entities_over_stdio(
    browsable: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:
        listed = await session.list_resources()
        uris = [r.uri for r in listed.resources]
        assert uris[0] == "kg://graph"
        assert "kg://documents/docs/api/charges.md" in uris
        assert "kg://entities/apiobject/charge" in uris
        assert "kg://entities/endpoint/POST%20/v1/charges" in uris
        # Denied: neither listed nor named, only counted.
        assert "kg://documents/docs/secret.md" not in uris
        assert "vault" not in str(listed.resources).lower()
        assert listed.meta is not None and listed.meta["kg/excluded_by_policy"] == 2
        assert listed.next_cursor is None

        templates = {
            t.uri_template for t in (await session.list_resource_templates()).resource_templates
        }
        assert {
            "kg://documents/{+path}",
            "kg://sections/{+path}/{anchor}",
            "kg://entities/{type}/{+name}",
            "kg://decisions/{id}",
            "kg://decision-days/{day}",
            "kg://nodes/{id}",
        } <= templates

        root = await read(session, "kg://graph")
        assert "[Charges](kg://documents/docs/api/charges.md)" in root
        assert "## APIObject (2)" in root and "VAULT" not in root.upper()
        assert "_2 node(s) excluded by policy._" in root

        document = await read(session, "kg://documents/docs/api/charges.md")
        assert "- [Create a charge](kg://sections/docs/api/charges.md/create-a-charge)" in document

        section = await read(session, "kg://sections/docs/api/charges.md/create-a-charge")
        assert "# docs/api/charges.md > Charges > Create a charge" in section
        assert "[Charge](kg://entities/apiobject/charge) APIObject (weight 2)" in section

        entity = await read(session, "kg://entities/apiobject/charge")
        assert "## REQUIRES\n\n- [Customer](kg://entities/apiobject/customer)" in entity
        assert "## RETURNS (from)\n\n- [POST /v1/charges](" in entity
        assert "## MENTIONS (from)" in entity

        generic = await read(session, "kg://nodes/apiobject%3Acustomer")
        assert generic.startswith("# Customer")

        for denied in ("kg://documents/docs/secret.md", "kg://entities/apiobject/vault%20key"):
            with pytest.raises(MCPError) as caught:
                await read(session, denied)
            assert "denied by policy" in str(caught.value)
            assert "VAULT-SECRET" not in str(caught.value)
        with pytest.raises(MCPError) as missing:
            await read(session, "kg://documents/docs/nowhere.md")
        assert "not found" in str(missing.value)


async def test_decisions_by_day_and_entity_reads_over_http(
    browsable: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with http_server(server_env(db_url), tmp_path) as url, http_session(url) as session:
        decision = ok(
            await call(
                session,
                "record_decision",
                text="Charge customers through POST /v1/charges",
                references=["apiobject:charge"],
            )
        )
        node_id = decision["decision_id"]
        today = datetime.now(UTC).date().isoformat()
        day = await read(session, f"kg://decision-days/{today}")
        bare = node_id.removeprefix("decision:")
        assert f"(kg://decisions/{bare})" in day
        page = await read(session, f"kg://decisions/{bare}")
        assert "Charge customers through POST /v1/charges" in page
        assert "## REFERENCES\n\n- [Charge](kg://entities/apiobject/charge)" in page
        root = await read(session, "kg://graph")
        assert f"- [{today}](kg://decision-days/{today}): 1" in root
        with pytest.raises(MCPError) as bad_day:
            await read(session, "kg://decision-days/yesterday")
        assert "use YYYY-MM-DD" in str(bad_day.value)


async def test_completions_offer_visible_ids_and_names_for_the_templates(
    browsable: Runtime, db_url: str, tmp_path: Path
) -> None:
    async with stdio_session(server_env(db_url), tmp_path) as session:

        async def complete(template: str, name: str, value: str, **given: str) -> list[str]:
            ref = ResourceTemplateReference(uri=template)
            result = await session.complete(ref, {"name": name, "value": value}, given or None)
            return result.completion.values

        assert await complete("kg://documents/{+path}", "path", "docs/") == [
            "docs/api/charges.md"
        ], "the denied docs/secret.md is never offered"
        assert await complete("kg://entities/{type}/{+name}", "type", "") == [
            "apiobject",
            "endpoint",
        ]
        names = await complete("kg://entities/{type}/{+name}", "name", "c", type="apiobject")
        assert names == ["charge", "customer"]
        assert await complete("kg://entities/{type}/{+name}", "name", "v", type="apiobject") == []
        anchors = await complete(
            "kg://sections/{+path}/{anchor}", "anchor", "cr", path="docs/api/charges.md"
        )
        assert anchors == ["create-a-charge"]
        assert await complete("kg://nodes/{id}", "id", "endpoint:") == ["endpoint:POST /v1/charges"]


def test_an_id_holding_a_query_or_fragment_character_goes_through_kg_nodes() -> None:
    assert uri_of("document:docs/a.md") == "kg://documents/docs/a.md"
    assert uri_of("section:docs/a.md#goals") == "kg://sections/docs/a.md/goals"
    assert uri_of("errorcode:#42", ("Entity",)) == "kg://nodes/errorcode%3A%2342"
    assert uri_of("document:docs/what?.md") == "kg://nodes/document%3Adocs%2Fwhat%3F.md"
    assert NODE.match(uri_of("section:docs/#x.md#y")) == {"id": "section:docs/#x.md#y"}


@pytest.mark.parametrize(
    "selector",
    ['paths: ["docs/secret/**"]', "node_types: [Story]"],
    ids=["by path", "by type"],
)
async def test_resources_list_counts_a_document_a_policy_file_denies(
    runtime: Runtime, db_url: str, tmp_path: Path, selector: str
) -> None:
    """Issue 30 item 10: resources/list left a denied document out but reported
    ``kg/excluded_by_policy: 0`` (here the deny comes from a policy file, by path or type)."""
    files = {
        ".kg/policies/deny.yaml": (
            f"policies:\n  - id: hide\n    name: Hidden\n    effect: deny\n    {selector}\n"
        ),
        "docs/open.md": "# Open\n\nEveryone reads this.\n",
        "docs/secret/stories/plan.md": "# Plan\n\nThe VAULT-SECRET plan.\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    from kg.events import EventMetadata
    from kg.governance.sync import apply_policy_files

    await apply_policy_files(runtime, EventMetadata(actor="pytest"))  # as kg sync does first
    report = await ingest_paths(runtime, None)
    assert not report.errors, report.errors
    async with stdio_session(server_env(db_url), tmp_path) as session:
        listed = await session.list_resources()
    uris = [r.uri for r in listed.resources]
    assert "kg://documents/docs/open.md" in uris
    assert not any("secret" in u or "plan" in u.lower() for u in uris), uris
    assert "VAULT" not in str(listed)
    assert listed.meta is not None and listed.meta["kg/excluded_by_policy"] == 1  # the document
