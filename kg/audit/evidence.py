"""Checkpoints and proofs against the database: take a checkpoint, check that today's log
extends a held one (and if not, say where it differs), keep a witness copy outside the
database, and build inclusion proofs for a decision's events."""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from kg.audit import tree
from kg.audit.check_proof import PROOF_FORMAT
from kg.audit.checkpoint import (
    Checkpoint,
    SignerKey,
    load_checkpoint,
    origin_of,
    sign_checkpoint,
    write_json,
)
from kg.audit.legacy import canonical_of
from kg.audit.merkle import (
    CompactRange,
    ProofError,
    border_nodes,
    root_from_leaves,
    verify_consistency,
)
from kg.config import Scope
from kg.db.tenancy import tenant_transaction
from kg.errors import EvidenceError, NotFoundError, ValidationError
from kg.events.envelope import RecordedEvent
from kg.events.store import SELECT_EVENT, record_from_row

LEAVES_FILE = "leaves"  # a witness's mirror: 32 bytes per leaf, in order


async def take_checkpoint(pool: asyncpg.Pool, tenant_id: str, key: SignerKey) -> Checkpoint:
    async with tenant_transaction(pool, tenant_id, isolation="repeatable_read") as conn:
        log_id = await tree.log_id(conn)
        size = await tree.tree_size(conn, tenant_id)
        compact = await tree.compact_range(conn, tenant_id, size)
    return sign_checkpoint(key, log_id=log_id, tenant_id=tenant_id, size=size, border=compact)


def check_origin(cp: Checkpoint, log_id: str, tenant_id: str) -> None:
    if cp.log_id != log_id:
        raise EvidenceError(
            f"{cp.source} is a checkpoint of another log ({cp.log_id}), not of this database's "
            f"({log_id})"
        )
    if cp.tenant_id != tenant_id:
        raise EvidenceError(
            f"{cp.source} is a checkpoint of tenant {cp.tenant_id!r}, not of {tenant_id!r} "
            "(set KG_TENANT to check it)"
        )


@dataclass(frozen=True)
class ConsistencyResult:
    checkpoint: Checkpoint
    ok: bool
    message: str
    first_position: int | None = None

    def __str__(self) -> str:
        return self.message


async def check_checkpoint(pool: asyncpg.Pool, tenant_id: str, cp: Checkpoint) -> ConsistencyResult:
    """Does today's log extend ``cp``? A consistency proof from the stored tree, checked
    against the checkpoint's signed root and today's root (``kg audit verify`` has compared the
    stored tree with the events). If it fails, the checkpoint's border names the first subtree
    that differs, and a witness mirror of the leaves beside the checkpoint the exact event."""
    async with tenant_transaction(pool, tenant_id, isolation="repeatable_read") as conn:
        check_origin(cp, await tree.log_id(conn), tenant_id)
        head = await tree.current_head(conn, tenant_id)
        if cp.size > head.size:
            first = await tree.leaves_from(conn, tenant_id, head.size - 1, 1) if head.size else []
            return ConsistencyResult(
                cp,
                False,
                f"FAILS {cp.describe()}: the log has only {head.size} events of this tenant, "
                f"the checkpoint {cp.size}: events after position "
                f"{first[0].position if first else 0} were removed",
            )
        try:
            proof = (
                await tree.consistency_proof(conn, tenant_id, cp.size, head.size) if cp.size else []
            )
            if cp.size:
                verify_consistency(cp.size, head.size, cp.root, head.root, proof)
            return ConsistencyResult(
                cp,
                True,
                f"ok, {cp.describe()}: today's log ({head.size} events) extends it "
                f"(consistency proof of {len(proof)} hashes)",
            )
        except ProofError:
            pass
        return await _locate(conn, tenant_id, cp)


async def _locate(conn: asyncpg.Connection, tenant_id: str, cp: Checkpoint) -> ConsistencyResult:
    today = await tree.compact_range(conn, tenant_id, cp.size)
    nodes = border_nodes(cp.size)
    start = 0
    for (level, _), held in zip(nodes, cp.border, strict=True):
        if today.border[level] != held:
            break
        start += 1 << level
    span = 1 << level
    leaves = await tree.leaves_from(conn, tenant_id, start, span)
    exact = _mirror_difference(cp, start, leaves)
    if exact is not None:
        return ConsistencyResult(
            cp,
            False,
            f"FAILS {cp.describe()}: the log was rewritten; the first event that differs from "
            f"the checkpoint is at position {exact.position} (this tenant's event {exact.index + 1}"
            ", per the witness copy of the leaves)",
            exact.position,
        )
    first, last = leaves[0].position, leaves[-1].position
    return ConsistencyResult(
        cp,
        False,
        f"FAILS {cp.describe()}: the log was rewritten; the first event that differs is at a "
        f"position from {first} to {last} (keep checkpoints with --witness DIR to name it)",
        first if first == last else None,
    )


def _mirror_difference(cp: Checkpoint, start: int, leaves: list[tree.Leaf]) -> tree.Leaf | None:
    """The first of ``leaves`` that differs from the witness mirror next to the checkpoint
    file, when that mirror is authentic (its first ``cp.size`` leaves hash to the signed root)."""
    path = Path(cp.source).parent / LEAVES_FILE
    try:
        data = path.read_bytes()[: cp.size * 32]
    except OSError:
        return None
    if len(data) != cp.size * 32:
        return None
    mirror = [data[i : i + 32] for i in range(0, len(data), 32)]
    if root_from_leaves(mirror) != cp.root:
        return None
    for leaf in leaves:
        if leaf.hash != mirror[leaf.index]:
            return leaf
    return None


async def witness(pool: asyncpg.Pool, tenant_id: str, cp: Checkpoint, directory: Path) -> Path:
    """Keep ``cp`` in ``directory`` (outside the database) with a mirror of the tenant's leaf
    hashes; in a git repository, commit them. The mirror is extended only when today's log
    still extends the leaves it holds."""
    held = _read_mirror(directory, cp)
    count = len(held) // 32
    async with tenant_transaction(pool, tenant_id, isolation="repeatable_read") as conn:
        new = await tree.leaves_from(conn, tenant_id, count, cp.size - count)
    mirror = CompactRange()
    for i in range(count):
        mirror.append(held[i * 32 : i * 32 + 32])
    for leaf in new:
        mirror.append(leaf.hash)
    if mirror.size != cp.size or mirror.root() != cp.root:
        raise EvidenceError(
            f"the log no longer extends the leaves kept in {directory / LEAVES_FILE}: it was "
            "rewritten since the last checkpoint (kg audit verify --checkpoint tells where)"
        )
    return _write_witness(directory, cp, b"".join(leaf.hash for leaf in new))


def _read_mirror(directory: Path, cp: Checkpoint) -> bytes:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LEAVES_FILE
    held = path.read_bytes() if path.exists() else b""
    if len(held) % 32:
        raise EvidenceError(f"{path} is truncated ({len(held)} bytes, not 32 per leaf)")
    if len(held) // 32 > cp.size:
        raise EvidenceError(
            f"{path} holds {len(held) // 32} leaves, more than the log's {cp.size}: events were "
            "removed since the last checkpoint (kg audit verify --checkpoint tells where)"
        )
    return held


def _write_witness(directory: Path, cp: Checkpoint, new_leaves: bytes) -> Path:
    with (directory / LEAVES_FILE).open("ab") as out:
        out.write(new_leaves)
    target = directory / f"checkpoint-{cp.size:012d}.json"
    write_json(target, cp.to_json())
    if (directory / ".git").exists():
        for args in (["add", "-A"], ["commit", "-q", "-m", f"kg checkpoint {cp.size}"]):
            done = subprocess.run(
                ["git", "-C", str(directory), *args], capture_output=True, text=True
            )
            if done.returncode:
                raise EvidenceError(
                    f"kept {target}, but `git {' '.join(args[:2])}` failed in {directory}: "
                    f"{done.stderr.strip()[:300]}"
                )
    return target


def load_checkpoints(paths: list[Path], trusted_key: str | None) -> list[Checkpoint]:
    return [load_checkpoint(p, trusted_key=trusted_key) for p in paths]


async def subject_events(
    conn: asyncpg.Connection, scope: Scope, subject: str
) -> list[RecordedEvent]:
    """The events a proof for ``subject`` covers: for ``decision:ID`` its DecisionRecorded
    events and the ContextGraphBuilt/Used events of the context graphs that informed it (as
    ``kg audit trail --decision`` finds them); otherwise the event with that id."""
    if subject.startswith("decision:"):
        decision_id = subject.removeprefix("decision:")
        rows = await conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND project_id = $2 "
            "AND ((event_type = 'DecisionRecorded' AND payload->>'decision_id' = $3) "
            "OR (event_type IN ('ContextGraphBuilt', 'ContextGraphUsed') "
            "AND payload->>'context_graph_id' IN (SELECT jsonb_array_elements_text("
            "payload->'context_graph_ids') FROM kg_events WHERE tenant_id = $1 "
            "AND project_id = $2 AND event_type = 'DecisionRecorded' "
            "AND payload->>'decision_id' = $3))) ORDER BY tenant_id, position",
            scope.tenant_id,
            scope.project_id,
            decision_id,
        )
        if not any(r["event_type"] == "DecisionRecorded" for r in rows):
            raise NotFoundError(f"decision {subject!r} not found in this project")
    else:
        try:
            uuid.UUID(subject)
        except ValueError:
            raise ValidationError(
                f"{subject!r} is neither decision:ID nor an event id (a UUID)"
            ) from None
        rows = await conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND project_id = $2 "
            "AND event_id = $3::uuid",
            scope.tenant_id,
            scope.project_id,
            subject,
        )
        if not rows:
            raise NotFoundError(f"event {subject} not found in this project")
    return [record_from_row(r) for r in rows]


async def build_proof(
    pool: asyncpg.Pool, scope: Scope, subject: str, cp: Checkpoint | None
) -> dict[str, Any]:
    """Inclusion proofs for ``subject``'s events in the tenant's tree: at the checkpoint's
    size when one is given (then the proof checks against it offline), else at today's."""
    tenant = scope.tenant_id
    async with tenant_transaction(pool, tenant, isolation="repeatable_read") as conn:
        log_id = await tree.log_id(conn)
        if cp is not None:
            check_origin(cp, log_id, tenant)
            head = await tree.head_at(conn, tenant, cp.size)
            if head.root != cp.root:
                raise EvidenceError(
                    f"today's log does not extend {cp.source}: run kg audit verify "
                    f"--checkpoint {cp.source}"
                )
        else:
            head = await tree.current_head(conn, tenant)
        entries = []
        for event in await subject_events(conn, scope, subject):
            leaf = await tree.leaf_of_position(conn, tenant, event.position)
            if leaf is None:
                raise EvidenceError(f"the event at position {event.position} has no leaf")
            if leaf.index >= head.size:
                raise EvidenceError(
                    f"the event at position {event.position} is newer than the checkpoint "
                    f"({head.size} events): take a new checkpoint (kg audit checkpoint)"
                )
            path = await tree.inclusion_proof(conn, tenant, leaf.index, head.size)
            entries.append(
                {
                    "position": event.position,
                    "leaf_index": leaf.index,
                    "event_id": event.event_id,
                    "event_type": event.event_type,
                    "canonical_event": canonical_of(event),
                    "prev_hash": event.prev_hash,
                    "chain_hash": event.hash,
                    "path": [h.hex() for h in path],
                }
            )
    return {
        "format": PROOF_FORMAT,
        "origin": origin_of(log_id, tenant),
        "subject": subject,
        "tree_size": head.size,
        "root_hash": head.root.hex(),
        "entries": entries,
    }
