"""Payment gateways."""

from __future__ import annotations

from shop.money import format_price


class Gateway:
    def __init__(self, name: str) -> None:
        self.name = name

    def charge(self, order_id: str, amount: int) -> bool:
        self.audit(order_id, amount)
        return amount > 0

    def audit(self, order_id: str, amount: int) -> None:
        print(order_id, format_price(amount))


class FakeGateway(Gateway):
    def charge(self, order_id: str, amount: int) -> bool:
        self.audit(order_id, amount)
        return super().charge(order_id, amount)
