"""The redaction shape, decided once: what a caller may see of a node a policy redacts.

A redacted node keeps its id and type; its name becomes :data:`REDACTED_NAME`; its content,
labels and properties are dropped. A context graph, a graph query, a lineage step and every
rendering of them take a node's visible fields from :func:`visible`, so the shape cannot drift
between them. A denied node has no visible form at all: it is dropped (and counted) before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kg.errors import PolicyDeniedError
from kg.policies.model import REDACTED_NAME, NodeVerdict


class NodeFields(Protocol):
    """What :func:`visible` reads of a node (a projected row or an in-memory node)."""

    @property
    def name(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def labels(self) -> tuple[str, ...]: ...
    @property
    def properties(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Visible:
    """The fields of a node a caller may see under a verdict."""

    name: str
    content: str = ""
    labels: tuple[str, ...] = ()
    properties: Mapping[str, Any] = field(default_factory=dict)
    redacted: bool = False


REDACTED = Visible(REDACTED_NAME, redacted=True)


def visible(node: NodeFields, verdict: NodeVerdict) -> Visible:
    """The node as ``verdict`` lets a caller see it. A denied node must have been dropped
    before: asking for its visible form is refused (without naming it)."""
    if verdict.denied:
        raise PolicyDeniedError("a node denied by policy has no visible form: drop it")
    if verdict.redacted:
        return REDACTED
    return Visible(node.name, node.content, tuple(node.labels), node.properties)
