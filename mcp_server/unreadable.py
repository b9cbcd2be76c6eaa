"""An answer for requests the SDK cannot read, so that no request goes unanswered.

The SDK's stdio transport parses each line with pydantic, whose JSON parser refuses a string
holding a lone UTF-16 surrogate escape (``"\\ud800"``: valid JSON syntax, but not Unicode),
and then drops the line with a debug log: the client waits for a reply that never comes.
Python's own JSON parser does accept such lines, so the request's id can still be found and
answered with an error naming the argument: a tool error for ``tools/call`` (the agent reads
it and can correct itself), a JSON-RPC error for anything else. A line with no recoverable id
is still dropped (there is nobody to answer).

The SDK's *client* never sends such a request: it fails to encode it and raises before
anything is written (``tests/hostile`` shows both sides).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pydantic
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolResult,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    TextContent,
)

from kg.validation import bounded, clip, unstorable_reason

RequestId = str | int


async def answer_unreadable(
    source: ReadStream[SessionMessage | Exception],
    sink: MemoryObjectSendStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
) -> None:
    """Forward ``source`` to ``sink``; answer an unreadable request on ``write`` instead."""
    async with sink:
        async for item in source:
            reply = unreadable_reply(item) if isinstance(item, Exception) else None
            if reply is None:
                await sink.send(item)
            else:
                try:
                    await write.send(SessionMessage(reply))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return


def unreadable_reply(error: Exception) -> JSONRPCResponse | JSONRPCError | None:
    """The reply to the line ``error`` (the transport's parse error) was raised for, or None
    when no request id can be found in it."""
    if not isinstance(error, pydantic.ValidationError):
        return None
    raw = next((e.get("input") for e in error.errors(include_url=False)), None)
    if not isinstance(raw, str):
        return None
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return None  # not JSON at all: no id to answer
    if not isinstance(message, dict) or "method" not in message:
        return None
    request_id = message.get("id")
    if not _answerable(request_id):
        return None
    assert isinstance(request_id, str | int)
    problem = _first_unstorable(message.get("params"), "")
    if problem is None:
        reason = "the request is not a valid JSON-RPC request for this server"
        return _error(request_id, INVALID_REQUEST, reason)
    where, reason = problem
    params = message.get("params")
    if message.get("method") == "tools/call" and isinstance(params, dict):
        name = params.get("name")
        usable = isinstance(name, str) and len(name) <= 100 and unstorable_reason(name) is None
        tool = name if usable else "?"
        field = where.removeprefix("arguments.")
        text = f"Error executing tool {tool}: argument {clip(field, 80)} {reason}"
        result = CallToolResult(content=[TextContent(type="text", text=bounded(text))])
        result.is_error = True
        return JSONRPCResponse(
            jsonrpc="2.0",
            id=request_id,
            result=result.model_dump(by_alias=True, mode="json", exclude_none=True),
        )
    return _error(request_id, INVALID_PARAMS, f"parameter {clip(where, 80)} {reason}")


def _answerable(request_id: Any) -> bool:
    if isinstance(request_id, bool):
        return False
    if isinstance(request_id, int):
        return True
    return isinstance(request_id, str) and unstorable_reason(request_id) is None


def _error(request_id: RequestId, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=bounded(message))
    )


def _first_unstorable(value: Any, where: str) -> tuple[str, str] | None:
    """(dotted path, reason) of the first key or string that is not valid Unicode."""
    for path, text in _strings(value, where):
        reason = unstorable_reason(text)
        if reason is not None and "surrogate" in reason:
            return path or "(params)", reason
    return None


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every key and string in ``value`` with its path, in document order."""
    stack: list[tuple[Any, str, bool]] = [(value, where, False)]
    while stack:  # iterative: the line may nest deeply
        current, path, is_key = stack.pop()
        if isinstance(current, str):
            yield path, current
        elif isinstance(current, dict) and not is_key:
            for key, item in reversed(list(current.items())):
                child = f"{path}.{key}" if path else str(key)
                stack.append((item, child, False))
                stack.append((str(key), child, True))
        elif isinstance(current, list):
            for i, item in reversed(list(enumerate(current))):
                stack.append((item, f"{path}[{i}]", False))
