"""The call-resolution rules shared by the backfill and code ingestion (``kg.callgraph``)."""

from __future__ import annotations

from dataclasses import dataclass

from kg.callgraph import CallIndex, Unresolved


@dataclass(frozen=True)
class Fn:
    name: str
    class_name: str | None
    file_path: str | None


SAVE_REPO = Fn("save", "Repo", "shop/storage.py")
SAVE_CACHE = Fn("save", "Cache", "shop/cache.py")
PAY = Fn("pay", "Checkout", "shop/checkout.py")
HELPER_A = Fn("helper", None, "shop/a.py")
HELPER_B = Fn("helper", None, "shop/b.py")


def index() -> CallIndex[Fn]:
    calls: CallIndex[Fn] = CallIndex()
    for fn in (SAVE_REPO, SAVE_CACHE, PAY, HELPER_A, HELPER_B):
        calls.add(fn)
    return calls


def test_the_rules_in_order_qualified_self_unique_then_the_calling_file() -> None:
    calls = index()
    assert calls.resolve("Repo.save", None) is SAVE_REPO
    assert calls.resolve("self.save", "Cache") is SAVE_CACHE
    assert calls.resolve("pay()", None) is PAY
    assert calls.resolve("helper", None, ("shop/b.py",)) is HELPER_B
    # the first of several places that has any candidate decides
    assert calls.resolve("helper", None, ("shop/x.py", "shop/a.py")) is HELPER_A


def test_what_stays_open_is_reported_with_the_reason_never_guessed() -> None:
    calls = index()
    unknown = calls.resolve("print", None)
    assert unknown == Unresolved(
        "unknown",
        "unresolved call: callee 'print' is not a known function (external, builtin or "
        "dynamic call)",
    )
    ambiguous = calls.resolve("save", None, ("shop/other.py",))
    assert isinstance(ambiguous, Unresolved) and ambiguous.kind == "ambiguous"
    assert "2 functions have that name" in ambiguous.message


def test_visible_narrows_every_rule_to_what_the_call_can_see() -> None:
    calls = index()
    # ``x.save()`` with ``x: Cache``: only Cache's methods are visible, so the name is unique
    assert calls.resolve("Cache.save", None, (), lambda f: f.class_name == "Cache") is SAVE_CACHE
    assert calls.resolve("save", None, (), lambda f: f.class_name == "Cache") is SAVE_CACHE
    # a bare name the module neither defines nor imports sees nothing
    hidden = calls.resolve("pay", None, (), lambda f: f.file_path == "shop/cli.py")
    assert isinstance(hidden, Unresolved) and hidden.kind == "unknown"
