"""``sessions.db``: call_graph_functions, call_graph_edges, call_graph_memory (ADR-151).

Functions become ``Function`` nodes; an edge row becomes a ``CALLS`` edge once its callee name
resolves to exactly one function; a memory row becomes a ``RECORDED_IN`` edge from the function
to its ``Session`` node (asserted with the first row that names the session).
"""

from __future__ import annotations

import re
from typing import ClassVar

from backfill.links import FunctionRef
from backfill.rows import Field, MapContext, Mapped, Row, TableSpec, compact
from backfill.values import RowRejected, integer
from kg.events import DomainEvent, EdgeAsserted, NodeAsserted, build_event

_LABELS = ("legacy",)
_CONTROL = re.compile(r"[\x00-\x1f]")


def _legacy_id(value: str, column: str) -> str:
    if _CONTROL.search(value) or len(value) > 900:
        raise RowRejected(f"{column} {value[:40]!r} has control characters or is too long")
    return value


class Functions(TableSpec):
    name = "call_graph_functions"
    keeps_extra = True
    key = "node_id"
    indexes_all_rows = True
    fields: ClassVar[dict[str, Field]] = {
        "node_id": Field(("node_id", "id", "function_id"), required=True),
        "name": Field(("name", "function_name"), required=True),
        "file_path": Field(("file_path", "file", "path")),
        "start_line": Field(("start_line", "line", "lineno")),
        "end_line": Field(("end_line",)),
        "language": Field(("language", "lang")),
        "signature": Field(("signature",)),
        "docstring": Field(("docstring", "doc")),
        "class_name": Field(("class_name", "class")),
    }

    def ref(self, row: Row) -> FunctionRef:
        return FunctionRef(
            _legacy_id(row.key, row.key_column),
            row.required("name").strip(),
            (row.text("class_name") or "").strip() or None,
            row.text("file_path"),
        )

    def index(self, row: Row, ctx: MapContext) -> None:
        ctx.links.functions.add(self.ref(row))

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        ref, w = self.ref(row), row.warnings
        signature, docstring = row.text("signature"), row.text("docstring")
        properties = compact(
            {
                "legacy_node_id": ref.legacy_id,
                "file_path": ref.file_path,
                "start_line": integer(row.get("start_line"), row.col("start_line"), w),
                "end_line": integer(row.get("end_line"), row.col("end_line"), w),
                "language": row.text("language"),
                "signature": signature,
                "class_name": ref.class_name,
                "legacy": row.legacy_properties(),
            }
        )
        event = build_event(
            NodeAsserted,
            node_id=ref.node_id,
            node_type="Function",
            name=f"{ref.class_name}.{ref.name}" if ref.class_name else ref.name,
            content="\n\n".join(t for t in (signature, docstring) if t),
            properties=properties,
            labels=_LABELS,
        )
        return Mapped([event])


class CallEdges(TableSpec):
    name = "call_graph_edges"
    fields: ClassVar[dict[str, Field]] = {
        "caller_id": Field(("caller_id", "caller", "from_id"), required=True),
        "callee_name": Field(("callee_name", "callee", "to_name"), required=True),
        "call_line": Field(("call_line", "line")),
        "call_file": Field(("call_file", "file_path", "file")),
        "arguments": Field(("arguments", "args")),
    }

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        functions = ctx.links.functions
        caller = functions.function(row.required("caller_id"), row.col("caller_id"))
        call_file = row.text("call_file")
        callee = functions.resolve(row.required("callee_name"), caller, call_file)
        arguments = row.text("arguments")
        properties = compact(
            {
                "callee_name": row.text("callee_name"),
                "call_line": integer(row.get("call_line"), row.col("call_line"), row.warnings),
                "call_file": call_file,
                "arguments": arguments[:1000] if arguments else None,
            }
        )
        edge = build_event(
            EdgeAsserted,
            edge_type="CALLS",
            from_node=caller.node_id,
            to_node=callee.node_id,
            properties=properties,
        )
        return Mapped([edge])


class Memory(TableSpec):
    name = "call_graph_memory"
    fields: ClassVar[dict[str, Field]] = {
        "node_id": Field(("node_id", "function_id"), required=True),
        "session_id": Field(("session_id", "session"), required=True),
        "message_id": Field(("message_id", "message")),
        "change_type": Field(("change_type", "change", "action")),
        "timestamp": Field(("timestamp", "created_at", "time")),
    }

    def map(self, row: Row, ctx: MapContext) -> Mapped:
        function = ctx.links.functions.function(row.required("node_id"), row.col("node_id"))
        session = _legacy_id(row.required("session_id").strip(), row.col("session_id"))
        session_node = f"session:{session}"
        events: list[DomainEvent] = []
        if session_node not in ctx.links.sessions:
            events.append(
                build_event(
                    NodeAsserted,
                    node_id=session_node,
                    node_type="Session",
                    name=f"Session {session}",
                    properties={"legacy_session_id": session},
                    labels=_LABELS,
                )
            )
        properties = compact(
            {
                "message_id": row.text("message_id"),
                "change_type": row.text("change_type"),
                "timestamp": row.text("timestamp"),
            }
        )
        events.append(
            build_event(
                EdgeAsserted,
                edge_type="RECORDED_IN",
                from_node=function.node_id,
                to_node=session_node,
                properties=properties,
            )
        )
        # Only now: a row rejected above must not count its session as asserted.
        ctx.links.sessions.add(session_node)
        return Mapped(events, session_id=session)
