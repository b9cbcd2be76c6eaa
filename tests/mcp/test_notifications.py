"""Resource change notifications through the SDK's real client: a client subscribed to a
``kg://`` resource hears when an ingest changes it, whoever ran the ingest; never about what a
policy withholds."""

from __future__ import annotations

import warnings
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.session import ClientSession, IncomingMessage
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp_types import (
    Implementation,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    TextResourceContents,
)

from kg.events import PolicyDefined
from kg.ingest.service import ingest_paths
from kg.policies.model import PolicyRule
from kg.runtime import Runtime
from mcp_server.server import create_server
from tests.mcp.client import http_server, http_session, server_env, stdio_session
from tests.mcp.test_resources import FILES, browsable  # noqa: F401  (the fixture)

CHARGES = "kg://documents/docs/api/charges.md"
CHARGE = "kg://entities/apiobject/charge"
SECRET = "kg://documents/docs/secret.md"
UNTOUCHED = "kg://sections/docs/api/charges.md/charges"


class Heard:
    """What the server told the client, and a way to wait for it."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.list_changed = 0
        self._news = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.updated.append(str(message.params.uri))
        elif isinstance(message, ResourceListChangedNotification):
            self.list_changed += 1
        self._news.set()

    async def until(self, uri: str | None = None) -> None:
        """Until ``uri`` was updated (None: until the list changed)."""
        with anyio.fail_after(30):
            while uri not in self.updated if uri else not self.list_changed:
                self._news = anyio.Event()
                await self._news.wait()


async def subscribe(session: ClientSession, *uris: str) -> None:
    caps = session.server_capabilities
    assert caps is not None and caps.resources is not None
    assert caps.resources.subscribe is True and caps.resources.list_changed is True
    with (
        warnings.catch_warnings()
    ):  # deprecated from 2026-07-28; these clients negotiate 2025-11-25
        warnings.simplefilter("ignore")
        for uri in uris:
            await session.subscribe_resource(uri)


async def deny_the_vault_by_path(rt: Runtime) -> None:
    """The secret document's re-ingest replaces the GOVERNED_BY edge the fixture gave it: a
    policy by path keeps it denied."""
    await rt.store.append(
        rt.scope,
        "policies",
        [
            PolicyDefined(
                policy_id="policy:vault-path",
                name="The vault file is off limits",
                rule=PolicyRule(effect="deny", paths=("docs/secret.md",)),
            )
        ],
    )


async def change_the_docs(rt: Runtime, root: Path) -> None:
    """An ingest outside the server (as ``kg sync`` from a git hook would run it)."""
    (root / "docs/api/charges.md").write_text(
        FILES["docs/api/charges.md"] + "\nA **Charge** belongs to a **Merchant**.\n",
        encoding="utf-8",
    )
    (root / "docs/secret.md").write_text(FILES["docs/secret.md"] + "\nMore.\n", encoding="utf-8")
    (root / "docs/api/refunds.md").write_text("# Refunds\n\nA **Refund** returns a **Charge**.\n")
    await ingest_paths(rt, [root / "docs"])


async def test_a_subscribed_client_hears_of_an_ingest_over_stdio(
    browsable: Runtime,  # noqa: F811
    db_url: str,
    tmp_path: Path,
) -> None:
    await deny_the_vault_by_path(browsable)
    heard = Heard()
    async with stdio_session(server_env(db_url), tmp_path, message_handler=heard) as session:
        await subscribe(session, CHARGES, CHARGE, SECRET, UNTOUCHED)
        await session.list_resources()  # a round trip: the subscriptions are in place
        await change_the_docs(browsable, tmp_path)
        await heard.until(CHARGES)
        await heard.until(CHARGE)  # a new relationship shows on the entity's page
        await heard.until(None)  # a new document came
        page = (await session.read_resource(CHARGE)).contents[0]
        assert isinstance(page, TextResourceContents) and "merchant" in page.text.lower()
    assert SECRET not in heard.updated  # withheld by policy: not even its changes are told
    assert UNTOUCHED not in heard.updated  # a section of the document that did not change


async def test_a_subscribed_client_hears_of_an_ingest_over_http(
    browsable: Runtime,  # noqa: F811
    db_url: str,
    tmp_path: Path,
) -> None:
    heard = Heard()
    async with (
        http_server(server_env(db_url), tmp_path) as url,
        http_session(url, message_handler=heard) as session,
    ):
        await subscribe(session, CHARGES)
        await session.list_resources()
        await change_the_docs(browsable, tmp_path)
        await heard.until(CHARGES)
    assert heard.updated.count(CHARGES) >= 1


async def test_a_listening_client_hears_of_an_ingest_the_2026_way(
    browsable: Runtime,  # noqa: F811
    tmp_path: Path,
) -> None:
    """``subscriptions/listen`` (protocol 2026-07-28), through the SDK's in-process client."""
    await deny_the_vault_by_path(browsable)
    info = Implementation(name="listener", version="1")
    heard: list[object] = []
    async with (
        Client(create_server(browsable), client_info=info) as client,
        client.listen(
            resources_list_changed=True, resource_subscriptions=[CHARGES, SECRET]
        ) as events,
    ):
        await change_the_docs(browsable, tmp_path)
        with anyio.fail_after(30):
            async for event in events:
                heard.append(event)
                if ResourcesListChanged() in heard and ResourceUpdated(uri=CHARGES) in heard:
                    break
    # The list change is announced after every node of its batch: the secret's turn was before.
    assert ResourceUpdated(uri=SECRET) not in heard
