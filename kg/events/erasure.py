"""``ContentErased``: the receipt of an erasure, in the chain it erased from."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kg.events.base import DomainEvent


class ErasedPosition(BaseModel):
    """One event whose erasable content was removed: the digest the chain keeps for it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    position: int = Field(ge=1)
    event_hash: str
    digest: str
    fields: tuple[str, ...]


class ContentErased(DomainEvent):
    """Content was erased (``kg erase``). Says who (the event's actor), why (``reason``), under
    which ``authority`` (a ticket, a legal basis), what was selected (``selector`` and, for
    node and source selections, ``target``; a pattern is never recorded: it is the secret) and
    exactly which positions lost their content. ``not_erasable`` lists matching events written
    before migration 0014, whose content is inside the hashed payload and stays in the log."""

    event_type = "ContentErased"

    erasure_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")
    selector: Literal["node", "source", "pattern"]
    target: str = Field(default="", max_length=1000)
    reason: str = Field(min_length=1, max_length=2000)
    authority: str = Field(min_length=1, max_length=500)
    erased: tuple[ErasedPosition, ...]
    not_erasable: tuple[int, ...] = ()
