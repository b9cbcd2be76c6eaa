"""The content hash of a context graph: what the agent was shown, nothing else."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from kg.context.result import ContextEdge, ContextNode, GovernanceSummary
from kg.events.hashing import canonical_json


def graph_hash(
    mode: str,
    as_of: int,
    nodes: Sequence[ContextNode],
    edges: Sequence[ContextEdge],
    governance: GovernanceSummary,
) -> str:
    """Hash of everything the agent was shown (not of the build's id or wall-clock time).

    Built from tuples rather than ``dataclasses.asdict``, which deep-copies and cost a third of
    a build's CPU time.
    """
    body = [
        mode,
        as_of,
        [
            [
                n.node_id,
                n.node_type,
                n.name,
                n.content,
                n.properties,
                list(n.labels),
                n.score,
                n.reason,
                n.hop,
                n.redacted,
                n.breadcrumb,
                n.partial,
                n.status,
                list(n.superseded_by),
                list(n.copies),
            ]
            for n in nodes
        ],
        [[e.edge_id, e.edge_type, e.from_node, e.to_node, e.weight] for e in edges],
        [
            list(governance.policies_applied),
            governance.excluded_by_policy,
            governance.redacted_by_policy,
            governance.excluded_count,
            governance.redacted_count,
            governance.sensitive_count,
            governance.allowed_actions,
        ],
    ]
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()
