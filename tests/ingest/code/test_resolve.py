"""Linking the fixture repository: every call's target is known, so precision and recall of
the CALLS edges are measured, not assumed (the issue asks for >= 0.95 and >= 0.85)."""

from __future__ import annotations

from kg.parsed.model import ParsedDocument
from tests.ingest.code.fixture import expected_calls, link_repository, produced_calls


def edges(docs: list[ParsedDocument], edge_type: str) -> set[tuple[str, str]]:
    return {(e.from_node, e.to_node) for d in docs for e in d.edges if e.edge_type == edge_type}


def test_calls_precision_and_recall_on_the_fixture_repository() -> None:
    docs, stage = link_repository()
    expected, produced = expected_calls(), produced_calls(docs)
    correct = expected & produced
    precision = len(correct) / len(produced)
    recall = len(correct) / len(expected)
    assert precision >= 0.95, sorted(produced - expected)
    assert recall >= 0.85, sorted(expected - produced)
    assert stage.run.stats.resolved >= len(produced)  # call sites; edges are distinct pairs


def test_an_untyped_receiver_is_never_guessed_even_when_one_method_has_the_name() -> None:
    docs, stage = link_repository()
    produced = produced_calls(docs)
    # ``thing.save`` / ``thing.pay`` in an untyped function, and ``items.append`` (a list)
    # while the repository defines a function named ``append``:
    assert not any(caller == "function:shop/checkout.py#untyped" for caller, _ in produced)
    assert ("function:shop/orders.py#Order.add", "function:shop/money.py#append") not in produced
    assert stage.run.stats.untyped >= 3 and stage.run.stats.external >= 1


def test_imports_bases_requirements_and_specs_become_edges() -> None:
    docs, _ = link_repository()
    assert ("document:shop/cli.py", "document:shop/checkout.py") in edges(docs, "IMPORTS")
    assert ("document:web/api.ts", "document:web/format.ts") in edges(docs, "IMPORTS")
    assert edges(docs, "INHERITS") == {
        ("class:shop/storage.py#Repo", "class:shop/storage.py#Store"),
        ("class:shop/payments.py#FakeGateway", "class:shop/payments.py#Gateway"),
    }
    implements = edges(docs, "IMPLEMENTS")
    assert ("document:shop/orders.py", "requirement:FR-1") in implements
    assert ("function:shop/checkout.py#Checkout.pay", "requirement:FR-2") in implements
    assert ("document:web/api.ts", "requirement:FR-3") in implements
    assert ("document:shop/orders.py", "section:docs/prd.md#orders") in edges(docs, "REFERENCES")


def test_a_file_contains_its_top_level_symbols_and_a_class_its_methods() -> None:
    docs, _ = link_repository()
    checkout = {
        (a, b)
        for a, b in edges(docs, "CONTAINS")
        if a.startswith(("document:shop/che", "class:shop/che"))
    }
    assert checkout == {
        ("document:shop/checkout.py", "class:shop/checkout.py#Checkout"),
        ("document:shop/checkout.py", "function:shop/checkout.py#untyped"),
        ("class:shop/checkout.py#Checkout", "function:shop/checkout.py#Checkout.__init__"),
        ("class:shop/checkout.py#Checkout", "function:shop/checkout.py#Checkout.pay"),
        ("class:shop/checkout.py#Checkout", "function:shop/checkout.py#Checkout.remember"),
        ("class:shop/checkout.py#Checkout", "function:shop/checkout.py#Checkout.quick"),
    }
    checkout = next(d for d in docs if d.path == "shop/checkout.py")
    pay = next(n for n in checkout.nodes if n.node_id.endswith("#Checkout.pay"))
    assert (pay.node_type, pay.name) == ("Method", "Checkout.pay")
    assert pay.content.startswith("def pay(self, order: Order) -> bool:")
    assert "Charge the order's total" in pay.content
    assert pay.properties["start_line"] == 23 and pay.properties["class_name"] == "Checkout"
