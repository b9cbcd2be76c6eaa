"""Node references by name: ``Charge`` for ``apiobject:charge``, wherever a tool takes an id.

The one place a reference to a node is resolved, for every command and tool that takes one
(inspect, get_node, neighbours, paths, context-build anchors, decision references, lineage,
the action guard). A reference that is a node id is taken as it is. A project-relative path
names its file (``docs/prd.md``, ``src/shop/checkout.py``), a Markdown path with an anchor its
section (``docs/prd.md#goals``), a source location the innermost class or function there
(``src/shop/checkout.py:42``, else the file: :mod:`kg.read.code_anchors`), a Markdown path
with a requirement id the requirement that file defines (``specs/003-x/spec.md#FR-001``), and
a requirement id (``FR1``, ``FR-001``) the requirement of the one document that defines it
(several documents defining it: an :class:`AmbiguousNameError` listing them), else the
project-wide node of an id no document defines, when it exists. Otherwise it is read as the
name of an extracted entity (:mod:`kg.ingest.entities`), matched on the same normalised key
ingestion merges spellings with (``Charges``, ``charge`` and ``**Charge**`` are one name).

A reference that names nothing is an :class:`UnknownNodeError` and one that names several an
:class:`AmbiguousNameError` (listing the candidates, so the caller can pick an id), with the
same words whichever command or tool was given it. Denied entities are never candidates, so
an error never names them.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kg.errors import NotFoundError, ValidationError
from kg.read.code_anchors import is_code_location, resolve_code_anchors
from kg.validation import clip, clip_many

if TYPE_CHECKING:
    from kg.policies.evaluate import Governance
    from kg.projections.graph_reader import GraphReader

MAX_LISTED = 10
#: How a node may be named: said by every "not found" (the fix the error names).
HOW_TO_NAME = (
    "name it by its node id, a project-relative path (docs/prd.md, docs/prd.md#goals, "
    "src/app.py:42), a requirement id (FR1) or an entity name; `kg query TEXT` or the "
    "query_knowledge_graph tool finds nodes"
)


class UnknownNodeError(NotFoundError):
    """A reference to a node named no node of the project (visible to the caller)."""

    def __init__(self, refs: Sequence[str], what: str = "node", fix: str = HOW_TO_NAME) -> None:
        self.refs = tuple(refs)
        plural = "s" if len(self.refs) > 1 else ""
        super().__init__(f"{what}{plural} {clip_many(self.refs)} not found in this project: {fix}")


class AmbiguousNameError(ValidationError):
    """A name several visible nodes answer to; the message lists them."""


_MARKDOWN = re.compile(r"\.(?:md|markdown|mdx)(?:#|$)", re.IGNORECASE)
#: ``dir/name.ext`` or ``name.ext``, with an optional ``:line``
_FILE = re.compile(r"^[^\s:#]*[^\s:#/]\.[A-Za-z0-9]{1,10}(?::\d{1,7})?$")
_REQUIREMENT = re.compile(
    r"^([A-Za-z]{1,16}(?:-[A-Za-z]{1,16}){0,3})[-_ ]?(\d{1,9}(?:\.\d{1,9})*)$"
    r"|^((?:[A-Z]{1,16}-){1,3}[A-Z]{3,16})$"
)


def requirement_name(text: str) -> str | None:
    """The canonical requirement id ``text`` spells (``FR-001``, ``fr1`` -> ``FR-1``;
    ``PKG-FR-3``; ``CORE-FR-LOCK``), as :mod:`kg.ingest.requirements` names them."""
    match = _REQUIREMENT.match(text.strip())
    if match is None:
        return None
    if match.group(3):
        return match.group(3)
    number = ".".join(str(int(part)) for part in match.group(2).split("."))
    return f"{match.group(1).upper()}-{number}"


def spelled_ids(ref: str) -> list[str]:
    """The node ids a reference may spell other than as an id: a Markdown path's document or
    section (or the requirement its anchor names: ``specs/003-x/spec.md#FR-001``), another
    file's document (``path`` or ``path:line``), a requirement's project-wide id (canonical:
    upper-case prefix, a hyphen)."""
    text = ref.strip()
    found = []
    if _MARKDOWN.search(text):
        path, _, anchor = text.partition("#")
        path = posixpath.normpath(path)
        if not path.startswith(("/", "../")) and path != "..":
            found.append(f"section:{path}#{anchor.lower()}" if anchor else f"document:{path}")
            if anchor and (name := requirement_name(anchor)) is not None:
                found.append(f"requirement:{path}#{name}")
    elif _FILE.match(text):  # any other file: its document (code, YAML, text)
        path, _, line = text.partition(":")
        path = posixpath.normpath(path)
        if not path.startswith(("/", "../")) and path != ".." and (not line or line.isdigit()):
            found.append(f"document:{path}")
    name = requirement_name(text)
    if name is not None:
        found.append(f"requirement:{name}")
    return found


def _requirement_of(ref: str) -> str | None:
    """The canonical id a reference names when it means a requirement without saying whose:
    ``FR-001``, or the project-wide id ``requirement:FR-1`` (what ids were before they were
    scoped to the defining document)."""
    text = ref.strip()
    if text.startswith("requirement:") and "#" not in text:
        return requirement_name(text.removeprefix("requirement:"))
    return requirement_name(text)


async def _resolve_requirements(
    reader: GraphReader, gov: Governance, refs: Sequence[str], resolved: dict[str, str]
) -> None:
    """A bare requirement id (``FR-001``, or the project-wide ``requirement:FR-1`` when no
    such node is left) names the one document's requirement that defines it
    (``requirement:specs/003-x/spec.md#FR-1``); when several documents do, the error lists
    them so the caller can pick one. Denied requirements are never candidates. An id no
    document defines is left to the project-wide node (:func:`spelled_ids`)."""
    wanted = {ref: name for ref in refs if (name := _requirement_of(ref)) is not None}
    if not wanted:
        return
    rows = await reader.requirements_named(sorted(set(wanted.values())))
    visible = [
        r for r in rows if not gov.verdict(r.node_type, r.labels, r.governed_by, r.node_id).denied
    ]
    for ref, name in wanted.items():
        found = [r.node_id for r in visible if r.name == name]
        if len(found) == 1:
            resolved[ref] = found[0]
        elif found:
            listed = ", ".join(found[:MAX_LISTED])
            more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
            raise AmbiguousNameError(
                f"requirement {clip(ref)} is defined by {len(found)} documents: {listed}{more}; "
                "pass one of these node ids, or the defining file and the id "
                "(e.g. specs/003-x/spec.md#FR-001)"
            )


async def resolve_known(
    reader: GraphReader, gov: Governance, refs: Sequence[str], what: str = "node"
) -> list[str]:
    """:func:`resolve_all`, and an :class:`UnknownNodeError` naming every reference that
    names no node (``what``: how the caller calls them, "anchor node", "referenced node")."""
    resolved, unknown = await _resolve(reader, gov, refs)
    if unknown:
        raise UnknownNodeError(unknown, what)
    return resolved


async def resolve_all(reader: GraphReader, gov: Governance, refs: Sequence[str]) -> list[str]:
    """The node id each reference stands for (``ref`` itself when it names nothing: the caller
    decides what that means). Used by :meth:`kg.read.governed.Governed.resolve`."""
    return (await _resolve(reader, gov, refs))[0]


async def _resolve(
    reader: GraphReader, gov: Governance, refs: Sequence[str]
) -> tuple[list[str], list[str]]:
    """The node ids, and the references that named nothing. One query for the ids, one for
    the spelled ids, one per source location (few), one for the names."""
    known = {r.node_id for r in await reader.nodes(list(refs))}
    rest = [r for r in dict.fromkeys(refs) if r not in known]
    resolved: dict[str, str] = {}
    await _resolve_requirements(reader, gov, rest, resolved)
    spelled = {ref: spelled_ids(ref) for ref in rest if ref not in resolved}
    for ref in spelled:
        if ":" in ref and is_code_location(ref):  # ``src/app.py:42``: the symbol there first
            located = (await resolve_code_anchors(reader.conn, reader.scope, [ref]))[0]
            spelled[ref] = list(dict.fromkeys([located, *spelled[ref]]))
    wanted = sorted({c for ids in spelled.values() for c in ids})
    existing = {r.node_id for r in await reader.nodes(wanted)} if wanted else set()
    for ref, ids in spelled.items():
        hit = next((c for c in ids if c in existing), None)
        if hit is not None:
            resolved[ref] = hit
    names = [r for r in rest if r not in resolved]
    if not names:
        return [resolved.get(ref, ref) for ref in refs], []
    # Imported here: the read path loads the parser's package only when a name is looked up.
    from kg.read.entity_names import lookup_keys

    keys = {ref: lookup_keys(ref) for ref in names}
    rows = await reader.entities_keyed(sorted({k for ks in keys.values() for k in ks}))
    visible = [
        r for r in rows if not gov.verdict(r.node_type, r.labels, r.governed_by, r.node_id).denied
    ]
    for ref, ref_keys in keys.items():
        found = [r for r in visible if r.node_id.split(":", 1)[1] in ref_keys]
        if len(found) == 1:
            resolved[ref] = found[0].node_id
        elif found:
            listed = ", ".join(f"{r.node_id} ({r.node_type})" for r in found[:MAX_LISTED])
            more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
            raise AmbiguousNameError(
                f"the name {clip(ref)} is ambiguous: it matches {listed}{more}; "
                "pass one of these node ids instead"
            )
    unknown = [ref for ref in rest if ref not in resolved]
    return [resolved.get(ref, ref) for ref in refs], unknown
