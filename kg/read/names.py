"""Node references by name: ``Charge`` for ``apiobject:charge``, wherever a tool takes an id.

The one place a reference to a node is resolved, for every command and tool that takes one
(inspect, neighbours, paths, context-build anchors, decision references). A reference that is
a node id is taken as it is. A project-relative Markdown path names its document
(``docs/prd.md``) or, with an anchor, its section (``docs/prd.md#goals``), and a requirement
id names its requirement (``FR1``, ``FR-1``), when that node exists. Otherwise it is read as
the name of an extracted entity (:mod:`kg.ingest.entities`), matched on the same normalised
key ingestion merges spellings with (``Charges``, ``charge`` and ``**Charge**`` are one
name). Denied entities are never candidates, so an error never names them; several candidates make a
:class:`~kg.errors.ValidationError` that lists them, so the caller can pick an id.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kg.errors import ValidationError
from kg.validation import clip

if TYPE_CHECKING:
    from kg.policies.evaluate import Governance
    from kg.projections.graph_reader import GraphReader

MAX_LISTED = 10


_MARKDOWN = re.compile(r"\.(?:md|markdown|mdx)(?:#|$)", re.IGNORECASE)
_REQUIREMENT = re.compile(r"^([A-Za-z]{1,16})[-_ ]?(\d{1,9}(?:\.\d{1,9})*)$")


def spelled_ids(ref: str) -> list[str]:
    """The node ids a reference may spell other than as an id: a Markdown path's document or
    section, a requirement's id (canonical: upper-case prefix, a hyphen)."""
    text = ref.strip()
    found = []
    if _MARKDOWN.search(text):
        path, _, anchor = text.partition("#")
        path = posixpath.normpath(path)
        if not path.startswith(("/", "../")) and path != "..":
            found.append(f"section:{path}#{anchor.lower()}" if anchor else f"document:{path}")
    requirement = _REQUIREMENT.match(text)
    if requirement:
        found.append(f"requirement:{requirement.group(1).upper()}-{requirement.group(2)}")
    return found


async def resolve_all(reader: GraphReader, gov: Governance, refs: Sequence[str]) -> list[str]:
    """The node id each reference stands for (``ref`` itself when it names nothing: the caller
    reports it as not found, in its own words); one query for the ids, one for the names.
    Used by :meth:`kg.read.governed.Governed.resolve`."""
    known = {r.node_id for r in await reader.nodes(list(refs))}
    rest = [r for r in dict.fromkeys(refs) if r not in known]
    spelled = {ref: spelled_ids(ref) for ref in rest}
    wanted = sorted({c for ids in spelled.values() for c in ids})
    existing = {r.node_id for r in await reader.nodes(wanted)} if wanted else set()
    resolved: dict[str, str] = {}
    for ref, ids in spelled.items():
        hit = next((c for c in ids if c in existing), None)
        if hit is not None:
            resolved[ref] = hit
    names = [r for r in rest if r not in resolved]
    if not names:
        return [resolved.get(ref, ref) for ref in refs]
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
            raise ValidationError(
                f"the name {clip(ref)} is ambiguous: it matches {listed}{more}; "
                "pass one of these node ids instead"
            )
    return [resolved.get(ref, ref) for ref in refs]
