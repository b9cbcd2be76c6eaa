"""The verdict of ``kg audit verify``: every check a reviewer asked for, and whether all held.

The CLI prints it; deciding what "verified" means lives here, beside the checks, not in a shell.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from kg.audit.checkpoint import Checkpoint
from kg.audit.evidence import ConsistencyResult, check_checkpoint
from kg.audit.projections_check import ProjectionCheck, verify_projections
from kg.audit.verify import VerifyReport, find_position_gaps, verify_tenant
from kg.runtime import Runtime


@dataclass(frozen=True)
class AuditVerdict:
    chain: VerifyReport
    gaps: tuple[int, ...]
    checkpoints: tuple[ConsistencyResult, ...] = ()
    projections: tuple[ProjectionCheck, ...] = ()

    @property
    def ok(self) -> bool:
        return (
            self.chain.ok
            and not self.gaps
            and all(c.ok for c in self.checkpoints)
            and all(p.ok for p in self.projections)
        )

    def lines(self) -> Iterator[tuple[bool, str]]:
        """``(ok, text)`` per finding, in the order a reviewer reads them."""
        yield self.chain.ok, str(self.chain)
        if self.chain.tree_root:
            yield True, f"Merkle tree: {self.chain.events} leaves, root {self.chain.tree_root}"
        for result in self.checkpoints:
            yield result.ok, str(result)
        if self.gaps:
            missing = ", ".join(map(str, self.gaps))
            yield (
                False,
                f"BROKEN: the tenant's log is missing position(s) {missing}: events were removed",
            )
        for check in self.projections:
            yield check.ok, str(check)


async def audit(
    rt: Runtime, *, held: Sequence[Checkpoint] = (), projections: bool = False
) -> AuditVerdict:
    """Verify the tenant's chain, tree and gapless positions, each held checkpoint and, with
    ``projections``, every projection against a replay (live graph only)."""
    tenant = rt.scope.tenant_id
    chain = await verify_tenant(rt.app_pool, tenant)
    gaps = tuple(await find_position_gaps(rt.app_pool, tenant))
    results = tuple([await check_checkpoint(rt.app_pool, tenant, cp) for cp in held])
    checks: tuple[ProjectionCheck, ...] = ()
    if projections:
        await rt.catch_up()
        checks = tuple(await verify_projections(rt.system_pool, rt.url, rt.embedder, tenant))
    return AuditVerdict(chain, gaps, results, checks)
