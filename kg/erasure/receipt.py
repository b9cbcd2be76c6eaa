"""Erasure receipts: what was erased, by whom and why, and a check anyone can run later.

A receipt lists the ``ContentErased`` event (position and hash) and, for each erased event, its
position, its hash and the digest of the erased content. The chain hashes each event's payload,
which holds that digest, so :func:`check_receipt` proves against the log (and any signed
checkpoint the reviewer holds, via ``kg audit verify``/``prove``) that:

* the ``ContentErased`` event is in the chain and lists exactly the receipt's positions;
* each listed event still has its hash and the listed digest, and its content is gone;
* no other event lost content (``kg audit verify`` reports any event whose content is missing
  without a receipt as tampering).

Signed with an audit key (``kg audit keygen``) when one is given: Ed25519 over the receipt's
canonical JSON without the ``signature`` member.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from kg.audit.checkpoint import SignerKey, parse_verifier
from kg.audit.verify import recompute_hash
from kg.db.tenancy import set_tenant
from kg.erasure.execute import ErasureResult
from kg.errors import ErasureError
from kg.events.erasure import ContentErased
from kg.events.hashing import canonical_json, format_time
from kg.events.store import SELECT_EVENT, record_from_row

KIND = "kg-erasure-receipt"


def build_receipt(result: ErasureResult, key: SignerKey | None = None) -> dict[str, Any]:
    event = result.event.event_as(ContentErased)
    receipt: dict[str, Any] = {
        "kind": KIND,
        "version": 1,
        "erasure_id": result.erasure_id,
        "tenant_id": result.event.tenant_id,
        "project_id": result.event.project_id,
        "position": result.position,
        "event_hash": result.event.hash,
        "recorded_at": format_time(result.event.recorded_at),
        "actor": result.event.actor,
        "reason": event.reason,
        "authority": event.authority,
        "selector": event.selector,
        "target": event.target,
        "erased": [e.model_dump(mode="json") for e in event.erased],
        "not_erasable": list(event.not_erasable),
    }
    if key is not None:
        signature = key.private.sign(canonical_json(receipt).encode("utf-8"))
        receipt["signature"] = {
            "key": key.verifier(),
            "ed25519": base64.b64encode(signature).decode(),
        }
    return receipt


@dataclass
class ReceiptCheck:
    ok: bool
    problems: list[str] = field(default_factory=list)
    signed_by: str | None = None

    def __str__(self) -> str:
        if self.ok:
            who = f", signed by {self.signed_by}" if self.signed_by else ", unsigned"
            return f"receipt checks{who}"
        return "receipt does NOT check: " + "; ".join(self.problems)


def _check_signature(
    receipt: dict[str, Any], trusted_key: str | None
) -> tuple[str | None, str | None]:
    sig = receipt.get("signature")
    if sig is None:
        return None, ("the receipt is not signed" if trusted_key else None)
    key_text = trusted_key or str(sig.get("key", ""))
    if trusted_key and sig.get("key") != trusted_key:
        return None, "the receipt is signed by another key than the trusted one"
    name, public = parse_verifier(key_text, "receipt signature")
    body = {k: v for k, v in receipt.items() if k != "signature"}
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(
            base64.b64decode(sig["ed25519"]), canonical_json(body).encode("utf-8")
        )
    except (InvalidSignature, KeyError, ValueError):
        return None, "the signature does not match the receipt"
    return name, None


async def check_receipt(
    pool: asyncpg.Pool, receipt: dict[str, Any], *, trusted_key: str | None = None
) -> ReceiptCheck:
    """Check ``receipt`` against the log (system pool, or the app pool: reads one tenant)."""
    if receipt.get("kind") != KIND:
        raise ErasureError("this file is not a kg erasure receipt (no kind 'kg-erasure-receipt')")
    signed_by, problem = _check_signature(receipt, trusted_key)
    problems = [problem] if problem else []
    tenant = str(receipt["tenant_id"])
    listed = {int(e["position"]): e for e in receipt["erased"]}
    positions = [int(receipt["position"]), *listed]
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read"):
        await set_tenant(conn, tenant)
        rows = await conn.fetch(
            f"SELECT {SELECT_EVENT} FROM kg_events WHERE tenant_id = $1 AND position = ANY($2)",
            tenant,
            positions,
        )
    events = {r["position"]: record_from_row(r) for r in rows}
    marker = events.get(int(receipt["position"]))
    if marker is None or marker.event_type != "ContentErased":
        problems.append(f"no ContentErased event at position {receipt['position']}")
    else:
        if marker.hash != receipt["event_hash"] or recompute_hash(marker) != marker.hash:
            problems.append("the ContentErased event's hash differs from the receipt's")
        logged = marker.event_as(ContentErased)
        if [e.model_dump(mode="json") for e in logged.erased] != receipt["erased"]:
            problems.append("the ContentErased event lists other positions or digests")
    for position, entry in listed.items():
        e = events.get(position)
        if e is None:
            problems.append(f"position {position} is not in the log")
            continue
        if e.hash != entry["event_hash"] or recompute_hash(e) != e.hash:
            problems.append(f"event {position} does not have the hash the receipt lists")
        if e.content_digest != entry["digest"]:
            problems.append(f"event {position} does not commit to the receipt's digest")
        if not e.erased:
            problems.append(f"event {position} still holds its content")
    return ReceiptCheck(not problems, problems, signed_by)
