"""What rows of one table need to know about another: functions by id and name (CALLS edges,
memory rows) and the sessions that already have a node."""

from __future__ import annotations

from dataclasses import dataclass, field

from backfill.values import RowRejected
from kg.callgraph import CallIndex, Unresolved


@dataclass(frozen=True)
class FunctionRef:
    legacy_id: str
    name: str
    class_name: str | None
    file_path: str | None

    @property
    def node_id(self) -> str:
        return f"function:{self.legacy_id}"


@dataclass
class FunctionIndex:
    """Every importable row of ``call_graph_functions``, imported now or by an earlier run."""

    by_id: dict[str, FunctionRef] = field(default_factory=dict)
    calls: CallIndex[FunctionRef] = field(default_factory=CallIndex)

    def add(self, ref: FunctionRef) -> None:
        self.by_id[ref.legacy_id] = ref
        self.calls.add(ref)

    def function(self, legacy_id: str, column: str) -> FunctionRef:
        ref = self.by_id.get(legacy_id)
        if ref is None:
            raise RowRejected(
                f"{column} {legacy_id!r} is not an importable row of call_graph_functions"
            )
        return ref

    def resolve(self, callee: str, caller: FunctionRef, call_file: str | None) -> FunctionRef:
        """The one function a call by name means (the rules of :mod:`kg.callgraph`), else
        :class:`RowRejected` saying why: anything still open is reported, never guessed."""
        found = self.calls.resolve(callee, caller.class_name, (call_file or caller.file_path,))
        if isinstance(found, Unresolved):
            raise RowRejected(found.message)
        return found


@dataclass
class Links:
    functions: FunctionIndex = field(default_factory=FunctionIndex)
    sessions: set[str] = field(default_factory=set)  # session node ids already asserted
