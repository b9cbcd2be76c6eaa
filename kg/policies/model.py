"""Policies: what a context graph may contain, and what an agent may do with it.

A policy is a node (``policy:{id}``) created and changed by ``PolicyDefined`` events. It applies
to an entity when the entity has a GOVERNED_BY edge to it, or when its selector matches the
entity (node types, labels, file path globs, explicit node ids, or the whole project /
tenant). Tenant isolation is not a policy: it is enforced in SQL and cannot be switched off.
Who may act on what (``allow_actions`` with actors) is :mod:`kg.policies.actions`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field

from kg.events.policy import EFFECTS, Effect, PolicyRule

# The rule is part of the PolicyDefined event's stored schema, so the write side owns it: a
# change to it is a change of an event schema (a version bump and an upcaster), not of policy
# evaluation alone.
from kg.globs import glob_to_regex

__all__ = [
    "EFFECTS",
    "REDACTED_NAME",
    "Effect",
    "NodeVerdict",
    "Policy",
    "PolicyRule",
    "actor_matches",
    "document_paths",
    "node_path",
    "path_matches",
]

#: What a redacted node shows instead of its name. The redaction shape is decided here, once:
#: a redacted node keeps its id and type and this name; no content, properties or labels, in
#: a context graph, a graph query, a lineage step or a rendering alike.
REDACTED_NAME = "[redacted]"


#: Node id prefixes whose id carries the project-relative file path (``section:docs/a.md#x``,
#: ``function:src/app.py::main``): a ``paths`` selector matches these nodes by that path.
FILE_NODE_PREFIXES = frozenset(
    {"document", "section", "file", "module", "class", "function", "method", "directive"}
)


def node_path(node_id: str) -> str | None:
    """The project-relative file a node comes from, read off its id; None for other nodes."""
    prefix, sep, rest = node_id.partition(":")
    if sep and prefix == "requirement" and "#" in rest:  # defined by that file
        return rest.rpartition("#")[0] or None
    if not sep or prefix.casefold() not in FILE_NODE_PREFIXES:
        return None
    return rest.split("#", 1)[0].split("::", 1)[0] or None


def document_paths(typed: Iterable[tuple[str, str]]) -> dict[str, str]:
    """``{file path: type}`` of the documents among ``(node id, node type)`` pairs."""
    found: dict[str, str] = {}
    for node_id, node_type in typed:
        path = node_path(node_id) if node_id.startswith("document:") else None
        if path:
            found[path] = node_type
    return found


def path_matches(pattern: str, path: str) -> bool:
    return glob_to_regex(pattern).fullmatch(path) is not None  # case-sensitive, as git's paths


def actor_matches(pattern: str, actor: str) -> bool:
    """``*`` matches any run of characters (``mcp:*``, ``cli:alice``, ``*``)."""
    return fnmatch.fnmatchcase(actor, pattern)


@dataclass(frozen=True)
class Policy:
    policy_id: str
    name: str
    rule: PolicyRule
    project_id: str
    #: the log position of the event that gave the policy its current rule (0: unknown)
    since: int = 0
    #: the policy file declaring it ('' : defined through the API)
    origin: str = ""
    description: str = ""

    def selects(self, node_type: str, labels: Iterable[str], node_id: str = "") -> bool:
        """Whether the selector (not an edge) makes this policy apply to such a node."""
        return self.selected_by(node_type, labels, node_id) is not None

    def selected_by(
        self,
        node_type: str,
        labels: Iterable[str],
        node_id: str = "",
        path: str | None = None,
        file_type: str | None = None,
    ) -> str | None:
        """How the selector picks this node, in words (``path docs/legal/**``), or None.

        Explicit node ids select a node outright; node types, labels and path globs, when more
        than one kind is given, must all match (each kind matches on any of its values).
        ``path``: the node's file (``""``: none), when the caller has worked it out already
        (a verdict asks every policy about the same node). ``file_type``: the type of the
        document that file is (``Story``): a node type selector matches the document's
        sections (and so their passages) as it matches the document, as path and label
        selectors always did; a policy on Stories that left their acceptance criteria
        readable protected nothing."""
        rule = self.rule
        if rule.scope != "selected":
            return f"scope {rule.scope}"
        if node_id and node_id in rule.node_ids:
            return f"node id {node_id}"
        if node_id.startswith("requirement:") and "#" in node_id:
            # ``requirements: [FR-13]`` (requirement:FR-13) selects FR-13 whichever document
            # defines it (requirement:docs/prd.md#FR-13), as it did before ids were scoped.
            bare = "requirement:" + node_id.rpartition("#")[2]
            if bare in rule.node_ids:
                return f"node id {bare}"
        if not (rule.node_types or rule.labels or rule.paths):
            return None
        typed = None
        if rule.node_types:
            if node_type in rule.node_types:
                typed = f"type {node_type}"
            elif file_type is not None and file_type in rule.node_types:
                typed = f"document type {file_type}"
            else:
                return None
        label = None
        if rule.labels:
            label = next((lb for lb in rule.labels if lb in labels), None)
            if label is None:
                return None
        pattern = None
        if rule.paths:
            if path is None:
                path = node_path(node_id) or ""
            pattern = next((p for p in rule.paths if path and path_matches(p, path)), None)
            if pattern is None:
                return None
        how = [typed] if typed is not None else []
        how += [f"label {label}"] if label is not None else []
        how += [f"path {pattern}"] if pattern is not None else []
        return " + ".join(how)

    def grants(self, actor: str, action: str) -> bool:
        """Whether this allow_actions policy grants ``actor`` the ``action``."""
        rule = self.rule
        if rule.effect != "allow_actions":
            return False
        actors = rule.actors or ("*",)
        return any(actor_matches(a, actor) for a in actors) and any(
            action_in(action, granted) for granted in rule.actions
        )

    @property
    def gates(self) -> bool:
        """An allow_actions policy that names actors decides who may act on what it governs;
        one without actors only tells an agent what it may do."""
        return self.rule.effect == "allow_actions" and bool(self.rule.actors)


@dataclass
class NodeVerdict:
    """What the policies decided for one node."""

    denied_by: list[str] = field(default_factory=list)
    redacted_by: list[str] = field(default_factory=list)
    actions: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def denied(self) -> bool:
        return bool(self.denied_by)

    @property
    def redacted(self) -> bool:
        return bool(self.redacted_by) and not self.denied

    def shown_name(self, name: str) -> str:
        """The node's name as the caller may see it."""
        return REDACTED_NAME if self.redacted else name


# The actions an allow_actions policy can grant (kg.policies.actions decides who may act).
READ_ACTIONS = frozenset(
    {
        "build_context_graph",
        "trace_decision_lineage",
        "query_knowledge_graph",
        "get_entity_neighbors",
        "get_node",
        "find_path",
        "lint_graph",
        # kg mcp --memory-compat (the reference memory server's tools)
        "read_graph",
        "search_nodes",
        "open_nodes",
    }
)
WRITE_ACTIONS = frozenset(
    {
        "record_context_usage",
        "record_decision",
        "ingest_markdown",
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
    }
)
ACTIONS = READ_ACTIONS | WRITE_ACTIONS
GROUPS = {"read": READ_ACTIONS, "write": WRITE_ACTIONS, "*": ACTIONS}


def action_in(action: str, granted: str) -> bool:
    """Whether granting ``granted`` (an action, ``read``, ``write`` or ``*``) covers ``action``."""
    if granted == action or granted == "*":
        return True
    return action in GROUPS.get(granted, ())
