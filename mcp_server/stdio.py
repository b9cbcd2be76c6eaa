"""stdin for the stdio transport, read so that stopping the server never waits for the client.

The SDK reads stdin in an anyio worker thread. A read blocked there cannot be cancelled and the
worker is not a daemon, so a server told to stop (SIGTERM, Ctrl+C) would hang until the client
wrote another line, and a server killed instead would skip its cleanup (closing the pools, and
releasing the embedded PostgreSQL, which stops when its last process exits cleanly). Here a
daemon thread reads, and simply stays behind when the server stops.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import BinaryIO

DECODE_ERRORS = "replace"  # as the SDK does: a bad byte becomes a parse error, not a crash


class StdinLines:
    """The process's stdin as an async iterator of text lines, fed by a daemon thread."""

    def __init__(self, stream: BinaryIO | None = None) -> None:
        # A duplicate of fd 0, never closed: the daemon thread may still be reading it.
        self._stream = stream or open(os.dup(0), "rb")  # noqa: SIM115
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._thread: threading.Thread | None = None

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            for raw in iter(self._stream.readline, b""):
                line = raw.decode("utf-8", errors=DECODE_ERRORS)
                loop.call_soon_threadsafe(self._lines.put_nowait, line)
            loop.call_soon_threadsafe(self._lines.put_nowait, None)
        except (OSError, ValueError):
            loop.call_soon_threadsafe(self._lines.put_nowait, None)
        except RuntimeError:  # the event loop is closed: the server has stopped
            return

    def __aiter__(self) -> StdinLines:
        if self._thread is None:
            loop = asyncio.get_running_loop()
            self._thread = threading.Thread(
                target=self._read, args=(loop,), name="kg mcp stdin", daemon=True
            )
            self._thread.start()
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if line is None:
            raise StopAsyncIteration
        return line
