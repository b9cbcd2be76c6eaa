"""YAML front matter to JSON-safe properties.

Properties end up in events that are hashed as canonical JSON, so YAML-only values are
converted: dates to ISO 8601 strings, sets to sorted lists, other keys to strings. The
conversion has a size budget because YAML aliases can describe exponentially large values in
a few bytes ("billion laughs").
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from typing import Any

import yaml

MAX_VALUES = 10_000
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
        data = yaml.load(source, Loader=_LOADER)  # a safe loader, see _LOADER
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        detail = error.problem or error.context or "syntax error"
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
    converted = _json_safe(data, budget)
    assert isinstance(converted, dict)
    return converted


def _json_safe(value: Any, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise FrontMatterError(f"front matter has more than {MAX_VALUES} values")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {_key(k): _json_safe(v, budget) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return sorted((_json_safe(v, budget) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_json_safe(v, budget) for v in value]
    return str(value)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, dt.date | dt.datetime):
        return key.isoformat()
    if isinstance(key, bool) or key is None:
        return str(key).lower() if key is not None else "null"
    return str(key)
