"""The write side: domain events, the append-only hash-chained store, hashing."""

from kg.events.base import DomainEvent, build_event, decode_event, upcaster
from kg.events.context import ContextGraphBuilt, ContextGraphUsed
from kg.events.decision import DecisionRecorded
from kg.events.directives import DirectivesServed
from kg.events.envelope import AppendResult, EventMetadata, PendingEvent, RecordedEvent
from kg.events.erasure import ContentErased
from kg.events.knowledge import (
    EdgeAsserted,
    EdgeRetracted,
    EdgesAsserted,
    NodeAsserted,
    NodeRetired,
)
from kg.events.policy import ActionRefused, PolicyChanged, PolicyDefined, PolicyRetired
from kg.events.store import EventStore

__all__ = [
    "ActionRefused",
    "AppendResult",
    "ContentErased",
    "ContextGraphBuilt",
    "ContextGraphUsed",
    "DecisionRecorded",
    "DirectivesServed",
    "DomainEvent",
    "EdgeAsserted",
    "EdgeRetracted",
    "EdgesAsserted",
    "EventMetadata",
    "EventStore",
    "NodeAsserted",
    "NodeRetired",
    "PendingEvent",
    "PolicyChanged",
    "PolicyDefined",
    "PolicyRetired",
    "RecordedEvent",
    "build_event",
    "decode_event",
    "upcaster",
]
