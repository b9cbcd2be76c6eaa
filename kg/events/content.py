"""Erasable content: the free-text fields of an event, stored beside the log (migration 0014).

At append, :func:`split_erasable` takes an event's non-empty ``erasable_fields`` out of its
payload into a *body* ``{"fields": {...}, "salt": ...}`` and leaves in the payload a reference
``"$content": {"digest": sha256(canonical body), "fields": [names]}``; the body's canonical
JSON text is stored in ``kg_event_content`` at the event's position. The hash chain covers the
payload, so it covers the digest: erasing the body (``kg erase``) changes no hash, position or
Merkle node. The salt (random, erased with the body) makes the digest a hiding commitment: with
the body gone nobody can test a guess ("was it this phone number?") against it.

At read, :func:`hydrate` puts the fields back, once, where stored events become domain events
(:attr:`kg.events.envelope.RecordedEvent.event`); an erased field reads as :data:`ERASED`.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import orjson

from kg.events.hashing import canonical_json

CONTENT_KEY = "$content"
ERASED = "[erased]"


def body_digest(body_text: str) -> str:
    """The digest the payload keeps for a body (its canonical JSON text, as stored)."""
    return hashlib.sha256(body_text.encode("utf-8")).hexdigest()


def split_erasable(
    payload: dict[str, Any], fields: tuple[str, ...]
) -> tuple[dict[str, Any], str | None]:
    """``payload`` without its non-empty erasable ``fields`` (and with the reference to them),
    and the body text to store beside it (None when there is nothing to keep apart)."""
    kept = {name: payload[name] for name in fields if payload.get(name)}
    if not kept:
        return payload, None
    body = canonical_json({"fields": kept, "salt": secrets.token_hex(16)})
    stored = {k: v for k, v in payload.items() if k not in kept}
    stored[CONTENT_KEY] = {"digest": body_digest(body), "fields": sorted(kept)}
    return stored, body


def parse_body(body_text: str) -> dict[str, Any]:
    body = orjson.loads(body_text)
    assert isinstance(body, dict)
    return body


def content_ref(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The ``$content`` reference of a stored payload, or None (nothing erasable kept apart,
    e.g. every event appended before migration 0014)."""
    ref = payload.get(CONTENT_KEY)
    return ref if isinstance(ref, dict) else None


def hydrate(payload: dict[str, Any], body: dict[str, Any] | None) -> dict[str, Any]:
    """The domain payload of a stored one: the erasable fields put back from ``body``, or
    :data:`ERASED` in each of them when the body was erased."""
    ref = content_ref(payload)
    if ref is None:
        return payload
    restored = {k: v for k, v in payload.items() if k != CONTENT_KEY}
    fields = body.get("fields", {}) if body is not None else {}
    for name in ref.get("fields", ()):
        restored[name] = fields.get(name, ERASED) if body is not None else ERASED
    return restored
