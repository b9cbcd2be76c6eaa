"""Operational signal for the HTTP server: Prometheus metrics at ``/metrics`` and OpenTelemetry
spans, both on only with ``kg mcp --transport http --metrics``.

Metrics (one registry per server, so two servers in a process never share counters):

- ``kg_tool_duration_seconds{tool}``: tool call latency (histogram)
- ``kg_tool_calls_total{tool}`` and ``kg_tool_errors_total{tool}``: calls, and those that failed
- ``kg_served_tokens_total{tool}``: tokens handed to agents (context graph renderings, rules)
- ``kg_projection_lag_events{projection}``: events in this tenant's log a projection has not
  applied yet, read from the database when scraped
- ``kg_embedder_queue_texts``: texts waiting for the embedder in this process

Spans: ``mcp.tool`` per call (attribute ``mcp.tool.name``), and inside it the application's own
(``kg.context.build``, ``kg.search``, ``kg.append``: :mod:`kg.telemetry`), written as JSON Lines
to ``.kg/spans.jsonl`` (the SDK's console exporter; an OTLP exporter can replace it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import IO, Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest
from starlette.types import ASGIApp, Receive, Scope, Send

from kg import telemetry
from kg.runtime import Runtime
from kg.telemetry import embed_queue, span

METRICS_PATH = "/metrics"
SPANS_FILE = "spans.jsonl"
# Tool calls take from a millisecond (a cached search) to minutes (a whole project's ingest).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)


class Metrics:
    """The server's Prometheus registry and what the tools record in it."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.registry = CollectorRegistry()
        r = self.registry
        self.duration = Histogram(
            "kg_tool_duration_seconds", "MCP tool call latency", ["tool"], registry=r,
            buckets=BUCKETS,
        )  # fmt: skip
        self.calls = Counter("kg_tool_calls", "MCP tool calls", ["tool"], registry=r)
        self.errors = Counter("kg_tool_errors", "MCP tool calls that failed", ["tool"], registry=r)
        self.tokens = Counter(
            "kg_served_tokens", "Estimated tokens served to agents", ["tool"], registry=r
        )
        self.lag = Gauge(
            "kg_projection_lag_events",
            "Events of this tenant's log a projection has not applied yet",
            ["projection"],
            registry=r,
        )
        queue = Gauge(
            "kg_embedder_queue_texts", "Texts waiting for the embedder in this process", registry=r
        )
        queue.set_function(lambda: float(embed_queue()))
        self._children: dict[str, tuple[Any, Any, Any, Any]] = {}

    @contextlib.asynccontextmanager
    async def tool_call(self, tool: str) -> AsyncIterator[dict[str, Any]]:
        """Time one call, in a span; the caller puts the result in the yielded dict."""
        calls, errors, duration, served = self._of(tool)
        outcome: dict[str, Any] = {}
        started = time.perf_counter()
        calls.inc()
        try:
            with span("mcp.tool", **{"mcp.tool.name": tool}):
                yield outcome
        except BaseException:
            errors.inc()
            raise
        finally:
            duration.observe(time.perf_counter() - started)
        if outcome.get("is_error"):
            errors.inc()
        tokens = served_tokens(outcome.get("structured"))
        if tokens:
            served.inc(tokens)

    def _of(self, tool: str) -> tuple[Any, Any, Any, Any]:
        """One tool's labelled series, looked up once (``labels()`` takes a lock and costs
        as much as the increment itself)."""
        found = self._children.get(tool)
        if found is None:
            found = self._children[tool] = (
                self.calls.labels(tool),
                self.errors.labels(tool),
                self.duration.labels(tool),
                self.tokens.labels(tool),
            )
        return found

    async def scrape(self) -> bytes:
        """The exposition text, with the projections' lag read now."""
        rt = self.runtime
        for status in await rt.runner.status(rt.scope.tenant_id):
            self.lag.labels(status.name).set(status.lag)
        return bytes(generate_latest(self.registry))


def served_tokens(structured: Mapping[str, Any] | None) -> int:
    """The token estimate of what a result handed to the agent (a context graph's rendering,
    a rules checklist), 0 for results that carry none."""
    if not structured:
        return 0
    estimate = structured.get("token_estimate")
    if estimate is None:
        diagnostics = structured.get("diagnostics")
        estimate = diagnostics.get("token_estimate") if isinstance(diagnostics, dict) else None
    return int(estimate) if isinstance(estimate, int | float) else 0


class MetricsApp:
    """``GET /metrics`` served here; everything else (the MCP endpoint, the lifespan) by
    ``app``."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != METRICS_PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"use GET\n", b"text/plain")
            return
        await _respond(send, 200, await self.metrics.scrape(), CONTENT_TYPE_LATEST.encode())


async def _respond(send: Send, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.contextmanager
def spans_recorded(state_dir: Path) -> Any:
    """Install the OpenTelemetry SDK's tracer provider for this process, exporting each span as
    one JSON line to ``state_dir/spans.jsonl``; flushed and closed on exit."""
    state_dir.mkdir(parents=True, exist_ok=True)
    with (state_dir / SPANS_FILE).open("a", encoding="utf-8") as out:
        provider = TracerProvider(resource=Resource.create({"service.name": "kg-mcp"}))
        provider.add_span_processor(BatchSpanProcessor(_exporter(out)))
        trace.set_tracer_provider(provider)
        telemetry.enable(provider.get_tracer("kg"))
        try:
            yield provider
        finally:
            telemetry.enable(None)
            provider.shutdown()


def _exporter(out: IO[str]) -> ConsoleSpanExporter:
    def one_line(span: ReadableSpan) -> str:
        return str(span.to_json(indent=None)) + "\n"

    return ConsoleSpanExporter(out=out, formatter=one_line)
