"""Policy files into the log: only what changed is appended, as documents are.

A policy new to the graph becomes ``PolicyDefined``, one whose rule, name, description or file
differs ``PolicyChanged``, and a policy that a file declared before but no file declares now
``PolicyRetired``. Each event's provenance (``source``) is the ``file:line`` that declares the
policy. Policies defined through the API (no file) are never retired by a missing file; a file
may take one over by declaring its id. When any policy file has an error, nothing is appended:
a half-applied governance change is worse than none; and nothing new is ingested either
(:class:`~kg.errors.PolicyFilesError`, fail closed): the policies already in force stay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kg.errors import PolicyFilesError
from kg.events import EventMetadata, PendingEvent, PolicyChanged, PolicyDefined, PolicyRetired
from kg.events.base import DomainEvent
from kg.events.multi import StreamEvent
from kg.governance.files import PolicyFiles, PolicySpec, load_policy_files
from kg.governance.parts import PolicyParts
from kg.policies.model import Policy


@dataclass
class PolicySync:
    """What applying the policy files appended (ids per kind)."""

    defined: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    files: int = 0

    @property
    def events(self) -> int:
        return len(self.defined) + len(self.changed) + len(self.retired)

    def summary(self) -> str:
        return (
            f"{self.files} policy file(s): {len(self.defined)} defined, "
            f"{len(self.changed)} changed, {len(self.retired)} retired"
        )


def _same(spec: PolicySpec, policy: Policy) -> bool:
    return (
        spec.rule == policy.rule
        and spec.name == policy.name
        and spec.description == policy.description
        and spec.origin == policy.origin
    )


def plan(specs: Sequence[PolicySpec], current: Mapping[str, Policy]) -> list[DomainEvent]:
    """The events that make the graph's policies what the files say (pure)."""
    events: list[DomainEvent] = []
    wanted = {s.policy_id for s in specs}
    for spec in specs:
        existing = current.get(spec.policy_id)
        if existing is not None and _same(spec, existing):
            continue
        kind = PolicyDefined if existing is None else PolicyChanged
        events.append(
            kind(
                policy_id=spec.policy_id,
                name=spec.name,
                description=spec.description,
                rule=spec.rule,
                origin=spec.origin,
            )
        )
    for policy_id, policy in sorted(current.items()):
        if policy.origin and policy_id not in wanted:
            events.append(
                PolicyRetired(policy_id=policy_id, reason=f"no longer in {policy.origin}")
            )
    return events


async def project_policies(rt: PolicyParts) -> dict[str, Policy]:
    """The policies of this project as the graph holds them now (tenant-wide ones included)."""
    async with rt.reader().snapshot() as snap:
        found = (await snap.governed()).governance.policies
    return {k: p for k, p in found.items() if p.project_id == rt.scope.project_id}


def refuse_broken(files: PolicyFiles) -> PolicyFiles:
    """``files`` when every policy file is valid; else :class:`PolicyFilesError` naming each
    ``file:line``. An ingest must not go on while the intended policies are not in force:
    the files a broken deny was written to hide would be ingested and served."""
    if files.ok:
        return files
    shown = files.problems[:20]
    more = len(files.problems) - len(shown)
    raise PolicyFilesError(
        f"{len(files.problems)} problem(s) in the policy files, so nothing new was ingested "
        "(the policies already in force stay in force; fix the file(s) and run again, "
        "`kg lint` checks them):\n"
        + "\n".join(f"  {p.path}:{p.line}: {p.message}" for p in shown)
        + (f"\n  ... and {more} more" if more else "")
    )


async def checked_policy_files(root: Path) -> PolicyFiles:
    """The project's policy files, or :class:`PolicyFilesError` (:func:`refuse_broken`)."""
    return refuse_broken(await asyncio.to_thread(load_policy_files, root))


async def apply_policy_files(
    rt: PolicyParts, metadata: EventMetadata, files: PolicyFiles | None = None
) -> PolicySync:
    """Append what changed in the project's policy files (see the module docstring).

    Raises:
        PolicyFilesError: a policy file has an error; nothing was appended.
    """
    if files is None:
        files = await checked_policy_files(rt.settings.project_root)
    refuse_broken(files)
    result = PolicySync(files=len(files.files))
    current = await project_policies(rt)
    events = plan(files.specs, current)
    if not events:
        return result
    specs = files.by_id()
    items = []
    for event in events:
        policy_id = event.policy_id  # type: ignore[attr-defined]
        spec = specs.get(policy_id)
        source = spec.source if spec is not None else current[policy_id].origin
        meta = metadata.model_copy(update={"source": source})
        items.append(StreamEvent(policy_id, PendingEvent(event, meta)))
        kind = {"PolicyDefined": result.defined, "PolicyChanged": result.changed}.get(
            event.event_type, result.retired
        )
        kind.append(policy_id)
    await rt.store.append_many(rt.scope, items)
    await rt.catch_up()
    return result
