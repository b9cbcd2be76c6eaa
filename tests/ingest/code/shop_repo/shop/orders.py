"""Orders and their lines. Implements FR-1 (see docs/prd.md#orders)."""

from __future__ import annotations

from dataclasses import dataclass, field

from shop.money import append, cents, format_price


@dataclass
class Line:
    sku: str
    price: float
    quantity: int = 1

    def total(self) -> int:
        return cents(self.price) * self.quantity


@dataclass
class Order:
    id: str
    lines: list[Line] = field(default_factory=list)

    def add(self, sku: str, price: float) -> Line:
        line = Line(sku, price)
        self.lines.append(line)
        return line

    def total(self) -> int:
        amounts: list[int] = []
        for line in self.lines:
            amounts = append(amounts, line.total())
        return sum(amounts)

    def describe(self) -> str:
        return f"{self.id}: {format_price(self.total())}"
