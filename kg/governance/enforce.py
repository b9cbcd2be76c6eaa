"""Enforcement on the tools: may this actor run this action on these nodes? (See
:mod:`kg.policies.actions` for the rule.) A refusal is appended as ``ActionRefused`` to the
``policy-refusals`` stream before the typed error is raised, so a reviewer sees attempted
actions as well as performed ones.

The MCP tools and the CLI commands call :func:`require` first thing, with the actor
(``mcp:<client name>``, ``cli:<user>``) and the nodes the call names.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Sequence

from kg.errors import ActionRefusedError, KgError
from kg.events import ActionRefused, EventMetadata
from kg.governance.parts import PolicyParts
from kg.policies.actions import Refusal, Subject, authorize
from kg.validation import MAX_ID_CHARS, unstorable_reason

REFUSALS_STREAM = "policy-refusals"
#: node ids recorded in one ActionRefused (the refusal's count covers them all)
MAX_SUBJECTS = 1000


def cli_actor() -> str:
    """The actor a ``kg`` command acts as: ``KG_ACTOR`` if set, else ``cli:<login name>``."""
    configured = os.environ.get("KG_ACTOR", "").strip()
    if configured:
        return configured[:300]
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name (a container without a passwd entry)
        user = "unknown"
    return f"cli:{user}"


async def check(
    rt: PolicyParts, actor: str, action: str, node_ids: Sequence[str]
) -> Refusal | None:
    """What refuses ``actor`` the ``action`` on ``node_ids`` (None: allowed). Reads only."""
    # Every id (a sync may name thousands of files), but none that could not be a node id:
    # the tool's own validation refuses those, with its own message, once the guard passed.
    wanted = [
        n
        for n in dict.fromkeys(node_ids)
        if len(n) <= MAX_ID_CHARS and unstorable_reason(n) is None
    ]
    async with rt.reader().snapshot() as snap:  # a policy synced a moment ago applies
        governed = await snap.governed()
        policies = governed.governance.policies
        if not any(p.gates for p in policies.values()):
            return None
        # A node named by its path or name is decided as that node (kg.read.names); a name
        # that names nothing or several is the tool's own error, once the guard passed.
        with contextlib.suppress(KgError):
            wanted = list(dict.fromkeys(await governed.resolve(wanted)))
        found = {s.node_id: s for s in await governed.subjects(wanted)}
    subjects = [found.get(n, Subject(n)) for n in wanted]
    return authorize(policies, actor, action, subjects)


async def require(
    rt: PolicyParts,
    actor: str,
    action: str,
    node_ids: Sequence[str] = (),
    metadata: EventMetadata | None = None,
) -> None:
    """Return when ``actor`` may run ``action`` on ``node_ids``; else log the refusal and raise.

    Raises:
        ActionRefusedError: naming the action, the actor and the refusing policies.
    """
    refusal = await check(rt, actor, action, node_ids)
    if refusal is None:
        return
    if rt.as_of is None:  # a read-only replay cannot log; it refuses all the same
        event = ActionRefused(
            actor=actor,
            action=action,
            node_ids=tuple(n[:1000] for n in refusal.refused_ids[:MAX_SUBJECTS]),
            policy_ids=refusal.policy_ids,
            reason=refusal.message()[:2000],
        )
        meta = (metadata or EventMetadata(actor=actor)).model_copy(update={"actor": actor})
        await rt.store.append(rt.scope, REFUSALS_STREAM, [event], metadata=meta)
    raise ActionRefusedError(refusal.message(), refusal.policy_ids)
