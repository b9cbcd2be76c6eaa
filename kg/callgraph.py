"""How a call by name resolves to the one function it means: the rules shared by the backfill
of ADR-151's ``call_graph_edges`` and by code ingestion (tree-sitter call sites).

Both sides know a callee only by the name written at the call (``pay``, ``self.pay``,
``Checkout.pay``) plus where the call is. The rules, in order:

1. ``Class.method`` when exactly one function has that qualified name;
2. ``self.method`` / ``cls.method`` / ``this.method`` in the caller's own class;
3. the bare name when exactly one function has it;
4. among several, the one in the first of the ``here`` files that has any (the calling file
   for the backfill; the file a name was imported from, or the calling file, for code), then
   the one in the caller's class.

Anything still open is :class:`Unresolved`, with the reason, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Literal, Protocol, TypeVar

SELF_PREFIXES = ("self.", "cls.", "this.")


class Callee(Protocol):
    """What the rules need to know of a function (a backfilled row, a parsed symbol)."""

    @property
    def name(self) -> str: ...
    @property
    def class_name(self) -> str | None: ...
    @property
    def file_path(self) -> str | None: ...


T = TypeVar("T", bound=Callee)


@dataclass(frozen=True, slots=True)
class Unresolved:
    """Why a call was left without an edge: no such function, or several and no rule picks."""

    kind: Literal["unknown", "ambiguous"]
    message: str


@dataclass
class CallIndex(Generic[T]):
    """Functions by bare name and by ``Class.name``."""

    by_name: dict[str, list[T]] = field(default_factory=dict)
    by_qualified: dict[str, list[T]] = field(default_factory=dict)

    def add(self, ref: T) -> None:
        self.by_name.setdefault(ref.name, []).append(ref)
        if ref.class_name:
            self.by_qualified.setdefault(f"{ref.class_name}.{ref.name}", []).append(ref)

    def resolve(
        self,
        callee: str,
        caller_class: str | None,
        here: Sequence[str | None] = (),
        visible: Callable[[T], bool] | None = None,
    ) -> T | Unresolved:
        """The one function ``callee`` means when called from ``caller_class`` (if a method)
        in the files ``here`` (most specific first), or why there is none.

        ``visible`` narrows every rule to the functions the call can see at all (a language's
        scoping, which a legacy row does not record): code ingestion passes the names a module
        defines or imports, or the methods of the receiver's class and its bases.
        """

        def seen(refs: list[T]) -> list[T]:
            return refs if visible is None else [r for r in refs if visible(r)]

        name = callee.strip().removesuffix("()")
        if "." in name:
            exact = seen(self.by_qualified.get(name, []))
            if len(exact) == 1:
                return exact[0]
        if name.startswith(SELF_PREFIXES) and caller_class:
            own = seen(self.by_qualified.get(f"{caller_class}.{name.split('.', 1)[1]}", []))
            if len(own) == 1:
                return own[0]
        candidates = seen(self.by_name.get(name.rsplit(".", 1)[-1], []))
        if len(candidates) == 1:
            return candidates[0]
        if not candidates:
            return Unresolved(
                "unknown",
                f"unresolved call: callee {callee!r} is not a known function "
                "(external, builtin or dynamic call)",
            )
        for place in here:
            narrowed = [c for c in candidates if place and c.file_path == place]
            if len(narrowed) > 1 and caller_class:
                narrowed = [c for c in narrowed if c.class_name == caller_class]
            if len(narrowed) == 1:
                return narrowed[0]
            if narrowed:
                break
        shown = ", ".join(sorted(_shown(c) for c in candidates)[:3])
        return Unresolved(
            "ambiguous",
            f"unresolved call: callee {callee!r} is ambiguous, {len(candidates)} functions have "
            f"that name ({shown}{', ...' if len(candidates) > 3 else ''})",
        )


def _shown(ref: Callee) -> str:
    legacy = getattr(ref, "legacy_id", None)
    if isinstance(legacy, str):
        return legacy
    qualified = f"{ref.class_name}.{ref.name}" if ref.class_name else ref.name
    return f"{ref.file_path}#{qualified}" if ref.file_path else qualified
