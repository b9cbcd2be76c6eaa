"""What the metrics and spans cost a tool call (issue 35 item 4), in process, no database.

Measures, per call, the median over ``--runs`` runs of ``--calls`` calls each:
- a coroutine decorated with ``kg.telemetry.traced`` while tracing is off (the CLI; every
  append, search and build pays this), against the bare coroutine;
- the same with the OpenTelemetry SDK's provider installed (a batch processor whose exporter
  drops the spans, so only the recording is measured);
- ``Metrics.tool_call`` around a no-op tool (histogram, counters, the ``mcp.tool`` span).

    python bench/bench_telemetry.py [--calls 20000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from kg import telemetry


class _Drop(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


async def _noop() -> int:
    return 1


async def _per_call(fn: Callable[[], Awaitable[Any]], calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - started) / calls * 1e6


async def main(calls: int, runs: int) -> None:
    from mcp_server.metrics import Metrics

    traced = telemetry.traced("bench")(_noop)
    metrics = Metrics(runtime=None)  # type: ignore[arg-type]  # scrape() is not called

    async def tool() -> None:
        async with metrics.tool_call("bench_tool") as outcome:
            outcome["structured"] = {"token_estimate": 100}

    def median(values: list[float]) -> str:
        return f"{statistics.median(values):.2f} µs"

    results: dict[str, list[float]] = {}
    for _ in range(runs):
        telemetry.enable(None)
        results.setdefault("bare coroutine", []).append(await _per_call(_noop, calls))
        results.setdefault("traced, tracing off", []).append(await _per_call(traced, calls))
        results.setdefault("tool_call metrics, tracing off", []).append(
            await _per_call(tool, calls)
        )
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(_Drop()))
        telemetry.enable(provider.get_tracer("bench"))
        results.setdefault("traced, SDK recording", []).append(await _per_call(traced, calls))
        results.setdefault("tool_call metrics + span, SDK recording", []).append(
            await _per_call(tool, calls)
        )
        telemetry.enable(None)
        provider.shutdown()
    print(f"| case | per call (median of {runs} runs of {calls} calls) |\n| --- | --- |")
    for name, values in results.items():
        print(f"| {name} | {median(values)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.runs))
