"""Entity names: the normalised key that merges spellings, and the node id built from it.

``**Charges**``, ``**charge**`` and ``**Charge**`` are one entity (``apiobject:charge``): keys
are case-folded, whitespace-collapsed and the last word singularised. Endpoints keep their
path's case (``endpoint:POST /v1/charges/{id}``, ``:id`` written as ``{id}``); event names are
lower-cased as they are written (``event:charge.succeeded``).
"""

from __future__ import annotations

import re

ENTITY = "Entity"  # the label every extracted entity carries
_SPACES = re.compile(r"\s+")
_PATH_PARAM = re.compile(r":([A-Za-z_][A-Za-z0-9_]*)")
_KEEP_S = ("ss", "us", "is", "ics", "news", "series", "status")


def singular(word: str) -> str:
    """A plural English noun's singular, for the regular cases (``charges`` -> ``charge``)."""
    lower = word.lower()
    if len(lower) <= 3 or lower.endswith(_KEEP_S):
        return word
    if lower.endswith("ies") and len(lower) > 4:
        return word[:-3] + ("Y" if word[-3:].isupper() else "y")
    if lower.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if lower.endswith("s"):
        return word[:-1]
    return word


def term_name(raw: str) -> str:
    """The display name of a term: whitespace collapsed, its last word singular."""
    words = _SPACES.sub(" ", raw.strip()).split(" ")
    words[-1] = singular(words[-1])
    return " ".join(words)


def term_key(raw: str) -> str:
    return term_name(raw).casefold()


def endpoint_name(method: str, path: str) -> str:
    path = _PATH_PARAM.sub(r"{\1}", path.rstrip("/") or "/")
    return f"{method.upper()} {path}"


def node_prefix(node_type: str) -> str:
    return node_type.lower()


def entity_id(node_type: str, key: str) -> str:
    return f"{node_prefix(node_type)}:{key}"


def lookup_keys(name: str) -> list[str]:
    """The keys a user-typed name may stand for, most literal first (``Charge``,
    ``POST /v1/charges``, ``charge.succeeded``)."""
    stripped = _SPACES.sub(" ", name.strip().strip("`*_"))
    keys = [stripped, stripped.casefold(), term_key(stripped)]
    parts = stripped.split(" ", 1)
    if len(parts) == 2 and parts[0].upper() in HTTP_METHODS:
        keys.insert(0, endpoint_name(parts[0], parts[1]))
    return list(dict.fromkeys(k for k in keys if k))


HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
