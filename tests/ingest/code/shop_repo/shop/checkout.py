"""Checkout: paying for an order (FR-2)."""

from __future__ import annotations

import logging

from shop import storage
from shop.orders import Order
from shop.payments import Gateway as PaymentGateway
from shop.storage import Cache, Repo

log = logging.getLogger(__name__)


class Checkout:
    """Takes an order to paid."""

    def __init__(self, repo: Repo, gateway: PaymentGateway) -> None:
        self.repo = repo
        self.gateway = gateway
        self.cache = Cache()

    def pay(self, order: Order) -> bool:
        """Charge the order's total and keep a receipt (FR-2)."""
        amount = order.total()
        ok = self.gateway.charge(order.id, amount)
        if ok:
            self.remember(order)
        log.info("paid %s", order.describe())
        return ok

    def remember(self, order: Order) -> None:
        self.repo.save(order.id, order.describe())
        self.cache.save(order.id, order.total())

    @staticmethod
    def quick(order_id: str) -> Checkout:
        repo = storage.connect()
        return Checkout(repo, PaymentGateway("test"))


def untyped(thing) -> None:  # type: ignore[no-untyped-def]
    thing.save("k", 1)
    thing.pay(None)
