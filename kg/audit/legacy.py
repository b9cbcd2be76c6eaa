"""What a stored event's hash covers (:func:`canonical_of`), and events written before
canonical JSON dropped the sign of zero (migration 0009's release).

Until then an append hashed ``-0.0`` as ``-0.0``, while jsonb keeps no sign on zero and gives
``0.0`` back, so such an event could never verify again. The sign is lost from storage, so the
content of the event is the same whichever sign it was hashed with: trying the signs of its
zeros is not a weaker check, only the old serialisation. Bounded to a few zeros per event.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from kg.events.envelope import RecordedEvent
from kg.events.hashing import (
    canonical_event,
    canonical_json,
    chain_hash,
    standard_canonical_json,
)

MAX_ZEROS = 10


def _zero_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, float) and value == 0.0:
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _zero_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _zero_paths(item, (*path, index))


def _with_signs(value: Any, paths: list[tuple[Any, ...]], negative: tuple[bool, ...]) -> Any:
    signs = dict(zip(paths, negative, strict=True))

    def rebuild(item: Any, path: tuple[Any, ...]) -> Any:
        if path in signs:
            return -0.0 if signs[path] else 0.0
        if isinstance(item, dict):
            return {k: rebuild(v, (*path, k)) for k, v in item.items()}
        if isinstance(item, list):
            return [rebuild(v, (*path, i)) for i, v in enumerate(item)]
        return item

    return rebuild(value, ())


def negative_zero_variants(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``document`` with each combination of signs on its zeros (none if it has too many)."""
    paths = list(_zero_paths(document))
    if not paths or len(paths) > MAX_ZEROS:
        return
    for negative in itertools.product((False, True), repeat=len(paths)):
        if any(negative):
            yield _with_signs(document, paths, negative)


def canonical_of(event: RecordedEvent, dump: Callable[[Any], str] = canonical_json) -> str:
    """The canonical JSON the event's chain hash was computed over (``dump`` serialises the
    payload and metadata: the canonical form, or an earlier kg's)."""
    return canonical_event(
        position=event.position,
        event_id=event.event_id,
        tenant_id=event.tenant_id,
        project_id=event.project_id,
        stream_id=event.stream_id,
        stream_version=event.stream_version,
        event_type=event.event_type,
        schema_version=event.schema_version,
        payload_json=dump(event.payload),
        metadata_json=dump(event.metadata),
        recorded_at=event.recorded_at,
        idempotency_key=event.idempotency_key,
    )


def _signed_zero_json(value: Any) -> str:
    return standard_canonical_json(value, signed_zero=True)


def hashed_with_signed_zeros(event: RecordedEvent) -> bool:
    """Whether ``event`` matches its hash once some of its zeros are given back their sign."""
    document = {"payload": event.payload, "metadata": event.metadata}
    for variant in negative_zero_variants(document):
        signed = replace(event, payload=variant["payload"], metadata=variant["metadata"])
        if chain_hash(event.prev_hash, canonical_of(signed, _signed_zero_json)) == event.hash:
            return True
    return False
