"""What rows of one table need to know about another: functions by id and name (CALLS edges,
memory rows) and the sessions that already have a node."""

from __future__ import annotations

from dataclasses import dataclass, field

from backfill.values import RowRejected

_SELF = ("self.", "cls.", "this.")


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
    by_name: dict[str, list[FunctionRef]] = field(default_factory=dict)
    by_qualified: dict[str, list[FunctionRef]] = field(default_factory=dict)

    def add(self, ref: FunctionRef) -> None:
        self.by_id[ref.legacy_id] = ref
        self.by_name.setdefault(ref.name, []).append(ref)
        if ref.class_name:
            self.by_qualified.setdefault(f"{ref.class_name}.{ref.name}", []).append(ref)

    def function(self, legacy_id: str, column: str) -> FunctionRef:
        ref = self.by_id.get(legacy_id)
        if ref is None:
            raise RowRejected(
                f"{column} {legacy_id!r} is not an importable row of call_graph_functions"
            )
        return ref

    def resolve(self, callee: str, caller: FunctionRef, call_file: str | None) -> FunctionRef:
        """The one function a call by name means, else :class:`RowRejected` saying why.

        In order: ``Class.method`` exactly; ``self.method`` in the caller's class; the bare
        name when one function has it; among several, the one in the calling file (then in the
        caller's class). Anything still open is reported, never guessed.
        """
        name = callee.strip().removesuffix("()")
        if "." in name:
            exact = self.by_qualified.get(name, [])
            if len(exact) == 1:
                return exact[0]
        if name.startswith(_SELF) and caller.class_name:
            own = self.by_qualified.get(f"{caller.class_name}.{name.split('.', 1)[1]}", [])
            if len(own) == 1:
                return own[0]
        candidates = self.by_name.get(name.rsplit(".", 1)[-1], [])
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            raise RowRejected(
                f"unresolved call: callee {callee!r} is not a known function "
                "(external, builtin or dynamic call)"
            )
        here = call_file or caller.file_path
        narrowed = [c for c in candidates if here and c.file_path == here]
        if len(narrowed) > 1 and caller.class_name:
            narrowed = [c for c in narrowed if c.class_name == caller.class_name]
        if len(narrowed) == 1:
            return narrowed[0]
        shown = ", ".join(sorted(c.legacy_id for c in candidates)[:3])
        raise RowRejected(
            f"unresolved call: callee {callee!r} is ambiguous, {len(candidates)} functions have "
            f"that name ({shown}{', ...' if len(candidates) > 3 else ''})"
        )


@dataclass
class Links:
    functions: FunctionIndex = field(default_factory=FunctionIndex)
    sessions: set[str] = field(default_factory=set)  # session node ids already asserted
