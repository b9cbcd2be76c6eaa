"""Decisions: what an agent or a person decided, and what informed it."""

from __future__ import annotations

from pydantic import Field

from kg.events.base import DomainEvent
from kg.events.knowledge import NodeId


class DecisionRecorded(DomainEvent):
    """A decision was taken. ``informed_by`` lists the nodes the informing context graphs showed
    (or the ones the agent reported using), so lineage needs no guesswork later."""

    event_type = "DecisionRecorded"
    erasable_fields = ("text", "rationale")

    decision_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")
    text: str = Field(min_length=1, max_length=20_000)
    rationale: str = Field(default="", max_length=20_000)
    decision_type: str = Field(default="general", min_length=1, max_length=100)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    context_graph_ids: tuple[str, ...] = ()
    informed_by: tuple[NodeId, ...] = ()
    references: tuple[NodeId, ...] = ()
    supersedes: tuple[NodeId, ...] = ()

    @property
    def node_id(self) -> str:
        return f"decision:{self.decision_id}"
