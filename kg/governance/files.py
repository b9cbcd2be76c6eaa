"""Policy files: governance as code, reviewed in pull requests like the specs it governs.

Every ``*.yaml`` / ``*.yml`` under ``.kg/policies/`` (or the project-relative folder in
``KG_POLICY_DIR``) declares policies::

    default: deny-writes          # optional: every write needs a grant (else: allow)
    policies:
      - id: legal-hidden          # the node is policy:legal-hidden
        name: No agent reads legal
        effect: deny              # deny | redact | allow_actions
        paths: ["docs/legal/**"]  # selectors: paths, node_types, labels, requirements, nodes
      - id: agents-decide
        name: Agents may record decisions
        effect: allow_actions
        scope: project            # selected (default) | project | tenant
        actions: [read, record_decision]
        actors: ["mcp:*"]         # who is granted the actions (wildcards)

Loading is pure (no database): :func:`load_policy_files` returns the policies with the
``file:line`` each was declared at, and every problem found, also as ``file:line``.
:mod:`kg.governance.sync` turns them into events; ``kg lint`` reports the problems.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pydantic
import yaml

from kg.events.policy import EFFECTS, PolicyRule
from kg.parsed.model import ParseProblem
from kg.project_files import Refused, read_project_bytes

POLICY_DIR = ".kg/policies"
POLICY_DIR_ENV = "KG_POLICY_DIR"
DEFAULT_POLICY_ID = "policy:default"
DEFAULTS = ("allow", "deny-writes")
MAX_FILE_BYTES = 1_000_000

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$")
_REQUIREMENT = re.compile(r"^([A-Za-z]+)-?(\d+(?:\.\d+)*)$")
_TOP_KEYS = {"default", "policies"}
_KEYS = {
    "id", "name", "description", "effect", "scope", "actions", "actors",
    "node_types", "labels", "paths", "requirements", "nodes",
}  # fmt: skip
_LISTS = ("actions", "actors", "node_types", "labels", "paths", "requirements", "nodes")


@dataclass(frozen=True)
class PolicySpec:
    """One policy as a file declares it."""

    policy_id: str
    name: str
    description: str
    rule: PolicyRule
    origin: str  # the project-relative file
    line: int

    @property
    def source(self) -> str:
        return f"{self.origin}:{self.line}"


@dataclass
class PolicyFiles:
    """What the project's policy files declare, and what is wrong with them."""

    folder: str
    files: list[str] = field(default_factory=list)
    specs: list[PolicySpec] = field(default_factory=list)
    problems: list[ParseProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)

    def by_id(self) -> dict[str, PolicySpec]:
        return {s.policy_id: s for s in self.specs}


def policy_folder(root: Path, env: dict[str, str] | None = None) -> str:
    """The project-relative folder holding the policy files."""
    configured = (os.environ if env is None else env).get(POLICY_DIR_ENV, "").strip()
    return configured.strip("/") or POLICY_DIR


def is_policy_file(relpath: str, folder: str = POLICY_DIR) -> bool:
    return relpath.startswith(folder + "/") and relpath.endswith((".yaml", ".yml"))


def load_policy_files(
    root: Path, overrides: dict[str, str] | None = None, *, disk: bool = True
) -> PolicyFiles:
    """Every policy file of the project, parsed and checked on its own (lint adds the checks
    that need the specs). ``overrides`` maps project-relative paths to text that replaces the
    file's on disk, or adds one (``kg policy test`` previews a change this way); with
    ``disk=False`` only ``overrides`` are read (the pre-commit hook passes the staged files)."""
    folder = policy_folder(root)
    found = PolicyFiles(folder)
    texts: dict[str, str | None] = {}
    base = root / folder
    if disk and base.is_dir():
        for path in sorted(base.rglob("*")):
            if path.suffix in (".yaml", ".yml") and path.is_file():
                texts[path.relative_to(root).as_posix()] = None
    texts.update(overrides or {})
    defaults: list[tuple[str, int]] = []
    seen: dict[str, PolicySpec] = {}
    for rel in sorted(texts):
        found.files.append(rel)
        text = texts[rel]
        if text is None:
            text = _read(root, rel, found.problems)
            if text is None:
                continue
        for spec in _parse(text, rel, found.problems, defaults):
            earlier = seen.get(spec.policy_id)
            if earlier is not None:
                found.problems.append(
                    ParseProblem(
                        rel,
                        spec.line,
                        f"policy id {spec.policy_id} is already declared at {earlier.source}: "
                        "give each policy its own id",
                    )
                )
                continue
            seen[spec.policy_id] = spec
            found.specs.append(spec)
    for rel, line in defaults[1:]:
        found.problems.append(
            ParseProblem(
                rel,
                line,
                f"'default' is also set at {defaults[0][0]}:{defaults[0][1]}: set the project "
                "default in one policy file",
            )
        )
    return found


def _read(root: Path, rel: str, problems: list[ParseProblem]) -> str | None:
    data = read_project_bytes(root, Path(rel), MAX_FILE_BYTES)
    if isinstance(data, Refused):
        if data.too_large:
            problems.append(ParseProblem(rel, 1, f"larger than {MAX_FILE_BYTES} bytes: split it"))
        else:
            problems.append(ParseProblem(rel, 1, f"cannot be read: {data.message}"))
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        problems.append(ParseProblem(rel, 1, f"cannot be read: {error}"))
        return None


class _Mapping(dict[str, Any]):
    """A YAML mapping that remembers its 1-based line."""

    line = 1


# libyaml's parser when PyYAML was built with it (several times faster); the constructor, and
# so the line numbers below, are the same.
if TYPE_CHECKING:
    from yaml import SafeLoader as _Base
else:
    _Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_Base):
    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = _Mapping(
            {str(k): v for k, v in super().construct_mapping(node, deep=deep).items()}
        )
        mapping.line = node.start_mark.line + 1
        return mapping


_LineLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
    lambda loader, node: loader.construct_mapping(node, deep=True),  # type: ignore[arg-type]
)


def _parse(
    text: str, rel: str, problems: list[ParseProblem], defaults: list[tuple[str, int]]
) -> list[PolicySpec]:
    def problem(line: int, message: str) -> None:
        problems.append(ParseProblem(rel, line, message))

    try:
        data = yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        problem(mark.line + 1 if mark else 1, f"invalid YAML: {error.problem or error}")
        return []
    except yaml.YAMLError as error:
        problem(1, f"invalid YAML: {error}")
        return []
    if data is None:
        return []
    if isinstance(data, list):  # a bare list of policies
        data = _Mapping(policies=data)
    if not isinstance(data, dict):
        problem(1, "expected a mapping with 'policies:' (a list of policies)")
        return []
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        problem(_line(data), f"unknown key(s) {unknown}; allowed: {sorted(_TOP_KEYS)}")
    specs: list[PolicySpec] = []
    if "default" in data:
        line = _line(data)
        value = data["default"]
        if value not in DEFAULTS:
            problem(line, f"default {value!r} is not one of {', '.join(DEFAULTS)}")
        else:
            defaults.append((rel, line))
            if value == "deny-writes":
                specs.append(_default_policy(rel, line))
    items = data.get("policies", [])
    if not isinstance(items, list):
        problem(_line(data), "'policies' must be a list of policies")
        return specs
    for i, item in enumerate(items):
        spec = _policy(item, rel, i, problem)
        if spec is not None:
            specs.append(spec)
    return specs


def _default_policy(rel: str, line: int) -> PolicySpec:
    rule = PolicyRule(effect="allow_actions", scope="project", actions=("read",), actors=("*",))
    return PolicySpec(
        DEFAULT_POLICY_ID,
        "Project default: deny writes unless a policy allows them",
        "Everyone may read; every write needs an allow_actions policy granting it.",
        rule,
        rel,
        line,
    )


def _line(value: Any) -> int:
    return value.line if isinstance(value, _Mapping) else 1


def _policy(item: Any, rel: str, index: int, problem: Any) -> PolicySpec | None:
    where = f"policies[{index}]"
    if not isinstance(item, dict):
        problem(1, f"{where}: expected a mapping with id, name and effect")
        return None
    line = _line(item)
    unknown = sorted(str(k) for k in item if k not in _KEYS)
    if unknown:
        problem(line, f"{where}: unknown key(s) {unknown}; allowed: {sorted(_KEYS)}")
        return None
    raw_id = item.get("id")
    if not isinstance(raw_id, str) or not _ID.match(raw_id):
        problem(line, f"{where}: 'id' {raw_id!r} must be letters, digits, '_', '.', ':' or '-'")
        return None
    policy_id = raw_id if raw_id.startswith("policy:") else f"policy:{raw_id}"
    effect = item.get("effect")
    if effect not in EFFECTS:
        problem(line, f"{policy_id}: unknown effect {effect!r}; use one of {', '.join(EFFECTS)}")
        return None
    lists: dict[str, tuple[str, ...]] = {}
    for key in _LISTS:
        value = item.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            problem(line, f"{policy_id}: '{key}' must be a string or a list of strings")
            return None
        lists[key] = tuple(value)
    requirements = []
    for req in lists.pop("requirements"):
        match = _REQUIREMENT.match(req.strip())
        if match is None:
            problem(line, f"{policy_id}: requirement id {req!r} is not like FR-13")
            return None
        number = ".".join(str(int(p)) for p in match.group(2).split("."))
        requirements.append(f"requirement:{match.group(1).upper()}-{number}")
    nodes = lists.pop("nodes")
    try:
        rule = PolicyRule(
            effect=effect,
            scope=item.get("scope", "selected"),
            node_ids=tuple(dict.fromkeys([*nodes, *requirements])),
            **lists,
        )
    except pydantic.ValidationError as error:
        first = error.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"])
        problem(line, f"{policy_id}: {loc + ': ' if loc else ''}{first['msg']}")
        return None
    name = item.get("name") or policy_id.removeprefix("policy:")
    description = item.get("description") or ""
    if not isinstance(name, str) or not isinstance(description, str):
        problem(line, f"{policy_id}: 'name' and 'description' must be text")
        return None
    if rule.scope == "selected" and not (
        rule.node_types or rule.labels or rule.paths or rule.node_ids
    ):
        problem(
            line,
            f"{policy_id}: no selector: give paths, node_types, labels, requirements or nodes, "
            "or scope: project (GOVERNED_BY edges cannot be written in a policy file)",
        )
        return None
    return PolicySpec(policy_id, name[:200], description[:10_000], rule, rel, line)
