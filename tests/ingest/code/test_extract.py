"""Parsing one source file with tree-sitter: symbols, call sites, imports, mentions.

Real parses of small files in each supported language; no database.
"""

from __future__ import annotations

from kg.ingest.code.extract import parse_source
from kg.ingest.code.model import CodeFile
from kg.ingest.requirements import RequirementMatcher


def parse(path: str, text: str, language: str) -> CodeFile:
    return parse_source(path, text, language, RequirementMatcher())


def by_qualname(code: CodeFile) -> dict[str, tuple[str, str | None, int, int]]:
    return {s.qualname: (s.kind, s.class_name, s.start_line, s.end_line) for s in code.symbols}


def calls(code: CodeFile) -> set[tuple[str | None, tuple[str, ...]]]:
    return {(c.caller, c.parts) for c in code.calls}


PYTHON = '''"""Checkout. Implements FR-12, see docs/prd.md#payments."""
from shop.storage import Repo


class Checkout(Base):
    """Pays for orders."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def pay(self, order: "Order", n: int = 1) -> bool:
        """Charge it (FR-13)."""
        total = Order(n)
        total.check()
        self.repo.save(order)
        self.audit()
        def inner() -> None:
            helper()
        return Checkout.refund(order)

    class Receipt:
        def print(self) -> None:
            pass


def helper() -> None:
    items.append(1)
'''


def test_python_symbols_have_qualified_names_lines_signatures_and_docstrings() -> None:
    code = parse("shop/checkout.py", PYTHON, "python")
    assert by_qualname(code) == {
        "Checkout": ("Class", None, 5, 23),
        "Checkout.__init__": ("Method", "Checkout", 8, 9),
        "Checkout.pay": ("Method", "Checkout", 11, 19),
        "Checkout.Receipt": ("Class", None, 21, 23),
        "Checkout.Receipt.print": ("Method", "Receipt", 22, 23),
        "helper": ("Function", None, 26, 27),
    }
    pay = next(s for s in code.symbols if s.qualname == "Checkout.pay")
    assert pay.signature == 'def pay(self, order: "Order", n: int = 1) -> bool'
    assert pay.docstring == "Charge it (FR-13)."
    assert next(s for s in code.symbols if s.name == "Checkout").bases == ("Base",)
    assert code.module_doc.startswith("Checkout. Implements FR-12")


def test_python_calls_are_attributed_to_their_function_with_typed_receivers() -> None:
    code = parse("shop/checkout.py", PYTHON, "python")
    assert calls(code) == {
        ("Checkout.pay", ("Order",)),
        ("Checkout.pay", ("Order", "check")),  # total = Order(n): typed by its constructor
        ("Checkout.pay", ("Repo", "save")),  # self.repo = repo, and repo: Repo
        ("Checkout.pay", ("self", "audit")),
        ("Checkout.pay", ("helper",)),  # from the nested function: part of pay
        ("Checkout.pay", ("Checkout", "refund")),
        ("helper", ("items", "append")),  # untyped: kept as written, left unresolved later
    }


def test_imports_and_requirement_and_spec_mentions_are_recorded() -> None:
    code = parse("shop/checkout.py", PYTHON, "python")
    assert [(i.module, i.names) for i in code.imports] == [("shop.storage", (("Repo", "Repo"),))]
    mentions = {(m.owner, m.kind, m.target) for m in code.mentions}
    assert mentions == {
        (None, "requirement", "FR-12"),
        (None, "spec", "docs/prd.md"),
        ("Checkout.pay", "requirement", "FR-13"),
    }


def test_a_syntax_error_is_a_warning_with_its_line_and_the_rest_is_kept() -> None:
    code = parse("bad.py", "def ok():\n    pass\n\ndef broken(:\n    pass\n", "python")
    assert [str(p) for p in code.problems] == [
        "bad.py:4: syntax error (missing ')'); the rest of the file is kept"
    ]
    assert "ok" in by_qualname(code)


def test_typescript_classes_interfaces_arrow_functions_and_this_members() -> None:
    code = parse(
        "web/api.ts",
        """import { formatPrice } from "./format";
/** A client. */
export interface Client { get(path: string): Promise<string>; }
export class Api extends Base implements Client {
  constructor(private client: Client) { super(); }
  /** Fetch an order. */
  async order(id: string): Promise<string> {
    const body = await this.client.get(id);
    return formatPrice(body.length);
  }
}
export const make = (c: Client) => new Api(c);
""",
        "typescript",
    )
    assert by_qualname(code) == {
        "Client": ("Class", None, 3, 3),
        "Client.get": ("Method", "Client", 3, 3),
        "Api": ("Class", None, 4, 11),
        "Api.constructor": ("Method", "Api", 5, 5),
        "Api.order": ("Method", "Api", 7, 10),
        "make": ("Function", None, 12, 12),
    }
    api = next(s for s in code.symbols if s.name == "Api")
    assert api.bases == ("Base", "Client")
    order = next(s for s in code.symbols if s.qualname == "Api.order")
    assert order.docstring == "Fetch an order."
    assert ("Api.order", ("Client", "get")) in calls(code)
    assert ("make", ("Api",)) in calls(code)
    assert code.imports[0].names == (("formatPrice", "formatPrice"),)


def test_tsx_and_javascript_parse_with_their_own_grammars() -> None:
    tsx = parse(
        "web/App.tsx",
        "export function App(): JSX.Element { return <div>{render()}</div>; }\n",
        "tsx",
    )
    assert ("App", ("render",)) in calls(tsx)
    js = parse("web/a.js", "class A { m() { this.n(); } n() {} }\n", "javascript")
    assert ("A.m", ("self", "n")) in calls(js)


def test_go_methods_belong_to_their_receiver_type_and_the_receiver_plays_self() -> None:
    code = parse(
        "pkg/server/server.go",
        """package server

import "example.com/app/pkg/store"

// Server serves.
type Server struct{ db *store.DB }

// Run runs it.
func (s *Server) Run() error { s.listen(); store.Open(); return nil }

func (s *Server) listen() {}
""",
        "go",
    )
    assert by_qualname(code) == {
        "Server": ("Class", None, 6, 6),
        "Server.Run": ("Method", "Server", 9, 9),
        "Server.listen": ("Method", "Server", 11, 11),
    }
    run = next(s for s in code.symbols if s.qualname == "Server.Run")
    assert run.docstring == "Run runs it."
    assert calls(code) == {("Server.Run", ("self", "listen")), ("Server.Run", ("store", "Open"))}
    assert code.imports[0].names == (("store", ""),)


def test_rust_impl_methods_belong_to_the_type_and_traits_are_bases() -> None:
    code = parse(
        "src/shop.rs",
        """use crate::util::helper;
/// A cart.
pub struct Cart { n: u32 }
pub trait Total { fn total(&self) -> u32; }
impl Total for Cart {
    fn total(&self) -> u32 { self.count(); helper(); Cart::new(); 0 }
}
""",
        "rust",
    )
    quals = by_qualname(code)
    assert quals["Cart"][0] == "Class" and quals["Cart.total"][:2] == ("Method", "Cart")
    assert next(s for s in code.symbols if s.name == "Cart").bases == ("Total",)
    assert {
        ("Cart.total", ("self", "count")),
        ("Cart.total", ("helper",)),
        ("Cart.total", ("Cart", "new")),
    } <= calls(code)


def test_java_methods_constructors_and_object_creation() -> None:
    code = parse(
        "src/main/java/shop/Checkout.java",
        """package shop;
import shop.store.Repo;
public class Checkout extends Base implements Payable {
    private Repo repo;
    public Checkout() { this.repo = new Repo(); }
    public void pay(Order order) { repo.save(order); this.audit(); order.total(); audit(); }
}
""",
        "java",
    )
    assert by_qualname(code)["Checkout.pay"][:2] == ("Method", "Checkout")
    assert next(s for s in code.symbols if s.name == "Checkout").bases == ("Base", "Payable")
    assert {
        ("Checkout.pay", ("self", "audit")),
        ("Checkout.pay", ("Order", "total")),
        ("Checkout.pay", ("audit",)),
        ("Checkout.__init__" if False else "Checkout.Checkout", ("Repo",)),
    } <= calls(code)
    assert code.package == "shop"


def test_a_name_no_node_id_can_carry_is_left_out_and_the_rest_kept() -> None:
    code = parse(  # a method named by a string with a tab in it: ids allow no control characters
        "web/odd.js",
        'class A { "a\tb"() {} ok() {} }\nfunction f() { return 1; }\n',  # a real tab
        "javascript",
    )
    assert set(by_qualname(code)) == {"A", "A.ok", "f"}
