"""YAML front matter to JSON-safe properties.

Properties end up in events that are hashed as canonical JSON, so YAML-only values are
converted: dates to ISO 8601 strings, sets to sorted lists, other keys to strings. The
conversion has a size budget because YAML aliases can describe exponentially large values in
a few bytes ("billion laughs"), and a depth bound because nesting is recursion: libyaml's
composer recurses in C (100,000 levels crash the process) and the conversion below in
Python. Depth is measured on the parser's event stream, which libyaml produces without
recursion, before anything is composed. Strings PostgreSQL cannot store (a NUL, a lone
surrogate: YAML escapes can write both) are refused with the key that holds them.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from typing import Any

import yaml

from kg.validation import clip, unstorable_reason

MAX_VALUES = 10_000
MAX_DEPTH = 64
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
# libyaml's loader when PyYAML was built with it: same safe semantics, several times faster.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FrontMatterError(ValueError):
    """Front matter that cannot become properties; ``line`` is 0-based within the YAML text."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def parse_front_matter(source: str) -> dict[str, Any]:
    """Parse the YAML between the ``---`` fences; an empty block gives ``{}``."""
    try:
        _check_depth(source)
        data = yaml.load(source, Loader=_LOADER)  # a safe loader, see _LOADER
    except RecursionError:  # a last guard: _check_depth should make it unreachable
        raise FrontMatterError(_too_deep("")) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        detail = error.problem or error.context or "syntax error"
        if "nesting depth" in detail:  # libyaml's own limit (1,000), met before ours
            raise FrontMatterError(_too_deep(""), mark.line if mark else 0) from None
        raise FrontMatterError(
            f"malformed front matter: {detail}", mark.line if mark else 0
        ) from None
    except yaml.YAMLError as error:
        raise FrontMatterError(f"malformed front matter: {error}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontMatterError(
            f"front matter must be a mapping of keys to values, not a {type(data).__name__}"
        )
    budget = [MAX_VALUES]
    try:
        converted = _json_safe(data, budget, "", 0)
    except FrontMatterError as error:
        key = getattr(error, "key", "")
        if key and not error.line:
            error.line = _key_line(source, key)
        raise
    assert isinstance(converted, dict)
    return converted


def _check_depth(source: str) -> None:
    """Refuse YAML nested deeper than :data:`MAX_DEPTH` before it is composed."""
    depth = 0
    for event in yaml.parse(source, Loader=_LOADER):
        if isinstance(event, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise FrontMatterError(_too_deep(""), mark.line if mark is not None else 0)
        elif isinstance(event, _CLOSE):
            depth -= 1


def _too_deep(key: str) -> str:
    where = f" (under key {clip(key, 60)})" if key else ""
    return (
        f"front matter nests deeper than {MAX_DEPTH} levels{where}: flatten it "
        "(front matter holds properties, not documents)"
    )


def _key_line(source: str, key: str) -> int:
    """0-based line of top-level ``key`` in the YAML text (0 when not found plainly)."""
    top = key.split(".", 1)[0]
    for n, line in enumerate(source.split("\n")):
        if line.startswith((f"{top}:", f'"{top}":', f"'{top}':")):
            return n
    return 0


class _KeyedError(FrontMatterError):
    """A problem with the value at ``key`` (dotted path from the top of the mapping)."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def _json_safe(value: Any, budget: list[int], key: str, depth: int) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise FrontMatterError(f"front matter has more than {MAX_VALUES} values")
    if depth > MAX_DEPTH:  # aliases can nest deeper than the text does
        raise _KeyedError(_too_deep(key), key)
    if isinstance(value, str):
        reason = unstorable_reason(value)
        if reason is not None:
            raise _KeyedError(f"front matter value of {clip(key or '(top)', 60)} {reason}", key)
        return value
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        result = {}
        for k, v in value.items():
            name = _key(k)
            path = f"{key}.{name}" if key else name
            reason = unstorable_reason(name)
            if reason is not None:
                raise _KeyedError(f"front matter key {clip(path, 60)} {reason}", path)
            result[name] = _json_safe(v, budget, path, depth + 1)
        return result
    if isinstance(value, set | frozenset):
        return sorted((_json_safe(v, budget, key, depth + 1) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_json_safe(v, budget, key, depth + 1) for v in value]
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, dt.date | dt.datetime):
        return key.isoformat()
    if isinstance(key, bool) or key is None:
        return str(key).lower() if key is not None else "null"
    return str(key)
