"""The MCP server: the kg tools on the SDK's high-level server, over one Runtime per process.

The Runtime (database pools, embedder, projection runner) is opened once, when the server
starts, and closed when it stops: the lifespan of a stdio process, or of the HTTP app (the
streamable-HTTP session manager enters the lifespan once for all sessions). Tenant and project
come from the Runtime's settings (``KG_TENANT``, ``KG_PROJECT``), never from a tool argument.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
import pydantic
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    CallToolResult,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    InputRequiredResult,
    ListResourcesResult,
    PaginatedRequestParams,
    ResourceTemplateReference,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)

from kg.db.lost import as_unavailable
from kg.errors import KgError
from kg.events.base import describe_validation_error
from kg.host.database import open_runtime
from kg.runtime import Runtime
from kg.validation import bounded
from mcp_server import logs, prompts, resources
from mcp_server.memory_tools import memory_tools
from mcp_server.notifications import ResourceWatch, watching
from mcp_server.state import AppState, KgContext, bind_session, runtime_of
from mcp_server.stdio import StdinLines
from mcp_server.tools import kg_tools
from mcp_server.unreadable import answer_unreadable

if TYPE_CHECKING:
    from mcp_server.metrics import Metrics

INSTRUCTIONS = """\
Project knowledge (specs, ADRs, components, policies, rules, past decisions) as a graph with an
audit trail. When to call what:
- Starting a task, or touching files: query_directives (task text + the files in play, or a
  diff) for the project's rules that apply (MUST first, with file:line); detect_context shows
  the layer/topics it detected.
- Before editing or deciding: build_context_graph (anchors you know, or a task text) and read
  its rendering; query_knowledge_graph finds node ids to anchor on; get_node gives one node in
  full; get_entity_neighbors and find_path explore.
- After relying on a context graph: record_context_usage for that tool call; when you make a
  choice others should know: record_decision with the context_graph_ids that informed it.
- Explaining a decision later: trace_decision_lineage (its result embeds the decision's kg://
  page). Specs changed on disk: ingest_markdown (reports progress); lint_graph checks links.
Prompts: rules_for_task, context_for_task, review_decision_lineage. Resources: kg://graph.
Policies may exclude or redact nodes; counts say how many, never what. A policy may also refuse
a tool call to this client: the error names the policy; ask a person to change it."""

_log = logging.getLogger(__name__)
#: Events per projection batch in a server (see projections_kept_current).
TAIL_BATCH = 100
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def _version() -> str:
    try:
        return version("kg")
    except PackageNotFoundError:  # running from a source tree without metadata
        return "0"


class KgMCPServer(MCPServer[AppState]):
    """``MCPServer`` whose tool errors read like the CLI's: the product's own message for a
    :class:`KgError`, and field-by-field reasons for arguments that fail the input schema."""

    #: Prometheus metrics and spans of the tool calls (``--metrics``), else None
    metrics: Metrics | None = None

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: KgContext | None = None
    ) -> CallToolResult | InputRequiredResult:
        bind_session(context)  # its reads wait for this client's own writes only
        if self.metrics is None:
            return await self._call_tool(name, arguments, context)
        async with self.metrics.tool_call(name) as outcome:
            result = await self._call_tool(name, arguments, context)
            if isinstance(result, CallToolResult):
                outcome["is_error"] = result.is_error
                outcome["structured"] = result.structured_content
            return result

    async def _call_tool(
        self, name: str, arguments: dict[str, Any], context: KgContext | None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError as exc:
            # The SDK hides the text of unexpected exceptions; a KgError is a user-caused,
            # actionable one (and never names policy-denied content), so it is passed on, as
            # is a lost database connection (which says only that, and that a retry resumes).
            cause = exc.__cause__
            error = cause if isinstance(cause, KgError) else as_unavailable(exc)
            if error is not None:
                raise ToolError(f"Error executing tool {name}: {bounded(str(error))}") from cause
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, pydantic.ValidationError):
                reason = describe_validation_error(exc.__cause__, "arguments")
                raise ToolError(
                    f"Error executing tool {name}: {bounded(reason)}"
                ) from exc.__cause__
            raise

    async def _handle_list_resources(
        self, ctx: ServerRequestContext[AppState], params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        """``resources/list`` from the graph, a page at a time, policy-filtered; what policies
        left out is only counted (``_meta.kg/excluded_by_policy``)."""
        cursor = params.cursor if params is not None else None
        try:
            found, more, excluded = await resources.listing(ctx.lifespan_context.runtime, cursor)
        except KgError as error:
            raise ResourceError(str(error)) from None
        return ListResourcesResult(
            resources=found, next_cursor=more, _meta={"kg/excluded_by_policy": excluded}
        )

    async def read_resource(
        self, uri: Any, context: KgContext | None = None
    ) -> Iterable[ReadResourceContents] | InputRequiredResult:
        """``kg://graph`` (the root, which has no URI variable to hang a template on) here;
        every other ``kg://`` URI through its template (:mod:`mcp_server.resources`)."""
        bind_session(context)
        if str(uri) == resources.ROOT and context is not None:
            text = await resources.root(runtime_of(context))
            return [ReadResourceContents(content=text, mime_type=resources.MARKDOWN)]
        return await super().read_resource(uri, context)

    async def _complete(
        self, ctx: ServerRequestContext[AppState], params: CompleteRequestParams
    ) -> CompleteResult:
        """``completion/complete`` for the ``kg://`` templates' variables: node ids and entity
        names this caller may see (a denied node is never offered)."""
        ref, argument = params.ref, params.argument
        values: list[str] = []
        if isinstance(ref, ResourceTemplateReference):
            given = (params.context.arguments if params.context else None) or {}
            try:
                values = await resources.complete(
                    ctx.lifespan_context.runtime, ref.uri, argument.name, argument.value, given
                )
            except KgError as error:
                raise MCPError(code=INVALID_PARAMS, message=str(error)) from None
        return CompleteResult(
            completion=Completion(values=values[:100], has_more=len(values) > 100)
        )

    async def run_stdio_lines(self, stdin: StdinLines) -> None:
        """``run_stdio_async``, reading the client's messages from ``stdin`` (see
        :mod:`mcp_server.stdio`); stdout is still the SDK's, which keeps stray prints off it."""
        async with (
            stdio_server(stdin=cast("anyio.AsyncFile[str]", stdin)) as (read, write),
            anyio.create_task_group() as tg,
        ):
            # Requests the SDK cannot parse (a lone surrogate) are answered, not dropped.
            forward, readable = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            tg.start_soon(answer_unreadable, read, forward, write)
            lowlevel = self._lowlevel_server
            await lowlevel.run(readable, write, lowlevel.create_initialization_options())
            tg.cancel_scope.cancel()  # the forwarder may still wait on stdin


@asynccontextmanager
async def projections_kept_current(rt: Runtime) -> AsyncIterator[None]:
    """Tail the log while the server runs (the runner wakes on each append's NOTIFY), and let
    reads go without catching up (:mod:`kg.read.reader`, background mode).

    A tool call reads the projected state as it is and says how far behind the log it is; it
    never waits on a backlog other writers appended (8 writers and 2 readers: reads waited
    seconds). It waits only for its own client's last write, projecting up to that position.
    The ``ContextGraphBuilt`` a call appends is projected while its result travels to the
    client. A failure here is logged; a read that needs its own write then fails with
    :class:`~kg.errors.ProjectionLagError` after its timeout, naming the positions.
    """
    if rt.as_of is not None:  # a read-only replay: nothing new will come
        yield
        return
    stop = asyncio.Event()
    # Batches of TAIL_BATCH: a batch's Python work runs on the event loop the tool calls share,
    # and 2,000 events of it kept every read waiting for seconds under 8 writers.
    batch_size, rt.runner.batch_size = rt.runner.batch_size, min(rt.runner.batch_size, TAIL_BATCH)
    task = asyncio.create_task(rt.runner.run(stop))
    task.add_done_callback(_log_failure)
    reader = rt.reader()
    reader.background = True
    try:
        yield
    finally:
        reader.background = False  # a runtime the CLI lent is inline again
        rt.runner.batch_size = batch_size
        stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _log.error("background projection catch-up stopped", exc_info=task.exception())


def create_server(
    runtime: Runtime | None = None,
    *,
    log_level: LogLevel = "WARNING",
    memory_compat: bool = False,
    metrics: Metrics | None = None,
) -> KgMCPServer:
    """The kg MCP server. Without ``runtime``, the lifespan opens one from the environment and
    closes it at shutdown; with one (the CLI opens it first, to report a bad database as a
    plain error), the lifespan lends it and the caller closes it. ``memory_compat`` adds the
    reference memory server's tools (:mod:`mcp_server.memory_tools`)."""

    watch = ResourceWatch()

    @asynccontextmanager
    async def lifespan(_: MCPServer[AppState]) -> AsyncIterator[AppState]:
        if runtime is not None:
            async with projections_kept_current(runtime), notifying(runtime):
                yield AppState(runtime)
            return
        async with open_runtime() as opened, projections_kept_current(opened), notifying(opened):
            yield AppState(opened)

    @asynccontextmanager
    async def notifying(rt: Runtime) -> AsyncIterator[None]:
        """Resource change notifications while the server runs (none for a replay)."""
        if rt.as_of is not None:
            yield
            return
        task = await watching(watch, rt, server._subscriptions)
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    server = KgMCPServer(
        "kg",
        title="kg knowledge graph",
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        log_level=log_level,
        tools=kg_tools() + (memory_tools() if memory_compat else []),
    )
    server.metrics = metrics
    resources.register(server)
    prompts.register(server)
    lowlevel = server._lowlevel_server
    lowlevel.add_request_handler("completion/complete", CompleteRequestParams, server._complete)
    lowlevel.add_request_handler("logging/setLevel", SetLevelRequestParams, logs.set_level)
    lowlevel.add_request_handler("resources/subscribe", SubscribeRequestParams, watch.subscribe)
    lowlevel.add_request_handler(
        "resources/unsubscribe", UnsubscribeRequestParams, watch.unsubscribe
    )
    # Handshake-era clients learn from the capabilities that resources/list_changed is sent
    # (the 2026-07-28 era derives it from the subscriptions/listen handler the SDK serves).
    lowlevel.create_initialization_options = functools.partial(  # type: ignore[method-assign]
        lowlevel.create_initialization_options, NotificationOptions(resources_changed=True)
    )
    return server
