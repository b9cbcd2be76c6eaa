"""What a project can configure about directives, in its schema map under ``directives:``::

    directives:
      strength:                 # extra words read as each strength (RFC 2119 ones are built in)
        must: [mandatory]
        should: [ideally]
        may: [optionally]
      layers:                   # path conventions: a glob on the project-relative path -> layer
        "src/web/**": 1-Presentation
        "db/**": 4-Persistence
      topics:                   # topic -> words that point at it (added to the shipped ones)
        billing: [invoice, stripe, refund]

Each part adds to the built-in defaults; a project-given path convention is tried before the
built-in ones.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from kg.directives.globs import GlobError, compile_glob
from kg.directives.model import LAYERS, WILDCARD, layer_name
from kg.errors import ValidationError

_KEYS = {"strength", "layers", "topics"}
_TOPIC = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class DirectiveConfig:
    must_words: tuple[str, ...] = ()
    should_words: tuple[str, ...] = ()
    may_words: tuple[str, ...] = ()
    path_layers: tuple[tuple[str, str], ...] = ()
    topics: tuple[tuple[str, tuple[str, ...]], ...] = ()
    _path_res: tuple[tuple[re.Pattern[str], str], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        compiled = tuple((compile_glob(g), layer) for g, layer in self.path_layers)
        object.__setattr__(self, "_path_res", compiled)

    def path_layer(self, relpath: str) -> tuple[str, str] | None:
        """The project's own convention for ``relpath``: (glob, layer), or None."""
        for (glob, _), (pattern, layer) in zip(self.path_layers, self._path_res, strict=True):
            if pattern.fullmatch(relpath):
                return glob, layer
        return None

    def fingerprint(self) -> str:
        """Changes when parsing rule files would give other strengths (see kg.ingest.diff)."""
        words = [list(self.must_words), list(self.should_words), list(self.may_words)]
        return hashlib.sha256(json.dumps(words).encode()).hexdigest()[:16]


DEFAULT_CONFIG = DirectiveConfig()


def parse_directive_config(raw: Any, source: str) -> DirectiveConfig:
    """Validate the ``directives:`` part of a schema map; errors name the file and the key."""

    def fail(where: str, message: str) -> ValidationError:
        return ValidationError(f"{source}: directives.{where}: {message}")

    if raw is None:
        return DEFAULT_CONFIG
    if not isinstance(raw, dict):
        raise ValidationError(f"{source}: directives: expected a mapping")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise ValidationError(
            f"{source}: directives: unknown key(s) {unknown}; allowed: {sorted(_KEYS)}"
        )
    strength = raw.get("strength") or {}
    if not isinstance(strength, dict) or not set(strength) <= {"must", "should", "may"}:
        raise fail("strength", "expected a mapping with keys must, should, may")
    words = {
        k: _words(strength.get(k, []), f"strength.{k}", fail) for k in ("must", "should", "may")
    }
    layers = raw.get("layers") or {}
    if not isinstance(layers, dict):
        raise fail(
            "layers", "expected a mapping of path glob -> layer (e.g. 'db/**': 4-Persistence)"
        )
    path_layers: list[tuple[str, str]] = []
    for glob, value in layers.items():
        layer = layer_name(str(value))
        if layer is None or layer == WILDCARD:
            raise fail(f"layers[{glob!r}]", f"{value!r} is not one of {', '.join(LAYERS)}")
        try:
            compile_glob(str(glob))
        except GlobError as error:
            raise fail(f"layers[{glob!r}]", str(error)) from None
        path_layers.append((str(glob), layer))
    topics = raw.get("topics") or {}
    if not isinstance(topics, dict):
        raise fail("topics", "expected a mapping of topic -> list of words")
    topic_items: list[tuple[str, tuple[str, ...]]] = []
    for topic, value in topics.items():
        name = str(topic).casefold()
        if not _TOPIC.match(name):
            raise fail(f"topics[{topic!r}]", "a topic is lowercase letters, digits, '-', '_', '.'")
        topic_items.append((name, _words(value, f"topics[{topic!r}]", fail)))
    return DirectiveConfig(
        words["must"], words["should"], words["may"], tuple(path_layers), tuple(topic_items)
    )


def _words(value: Any, where: str, fail: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v.strip() for v in items):
        raise fail(where, "expected a word or a list of words")
    return tuple(v.strip().casefold() for v in items)
