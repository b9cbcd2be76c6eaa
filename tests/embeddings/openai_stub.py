"""A real HTTP server implementing OpenAI's ``POST /v1/embeddings`` for tests and the benchmark.

It answers with deterministic, un-normalised vectors derived from each text's sha256, lists
``data`` in a shuffled index order (so clients must sort by ``index``), and records every request.
Paths under ``/status500/`` answer HTTP 500, under ``/garbage/`` invalid JSON, and under
``/short/`` one vector fewer than asked for. The ``dimensions`` request field is honoured, as
OpenAI's text-embedding-3 models do, except under ``/fixed/``, whose model has one size only.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STUB_DIMENSIONS = 16


def stub_vector(text: str, dimensions: int = STUB_DIMENSIONS) -> list[float]:
    """The raw (not normalised) vector the stub returns for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return [float(digest[i % len(digest)]) - 127.5 for i in range(dimensions)]


@dataclass
class Recorded:
    """One request the stub received."""

    path: str
    authorization: str | None
    body: dict[str, Any]


@dataclass
class StubServer:
    """Runs the stub on 127.0.0.1 in a daemon thread; use as a context manager. ``port`` 0
    takes a free one; a given port lets a test stop the server (an outage) and start another
    where the client expects it (the embedder is back)."""

    dimensions: int = STUB_DIMENSIONS
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    #: seconds each embeddings request takes (a slow model: a test interrupts a long embedding)
    delay: float = 0.0

    def __post_init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), _handler_for(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, ending in /v1."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def _handler_for(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            stub.requests.append(Recorded(self.path, self.headers.get("Authorization"), body))
            if stub.delay:
                time.sleep(stub.delay)
            if self.path.startswith("/status500/"):
                self._send(500, b'{"error": "stub failure"}')
            elif self.path.startswith("/garbage/"):
                self._send(200, b"<html>this is not json")
            elif self.path.endswith("/v1/embeddings"):
                texts = body["input"]
                size = stub.dimensions
                if "dimensions" in body and not self.path.startswith("/fixed/"):
                    size = body["dimensions"]
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": stub_vector(t, size),
                    }
                    for i, t in enumerate(texts)
                ]
                random.Random(len(texts)).shuffle(data)
                if self.path.startswith("/short/"):
                    data.pop()
                payload = {"object": "list", "model": body["model"], "data": data}
                self._send(200, json.dumps(payload).encode())
            else:
                self._send(404, b'{"error": "not found"}')

        def _send(self, status: int, content: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # keep test output clean

    return Handler
