"""Command line entry point."""

from __future__ import annotations

import sys

import shop.checkout as co
from shop.orders import Order
from shop.storage import Repo


def main(argv: list[str]) -> int:
    order = Order("o-1")
    order.add("sku-1", 9.5)
    checkout: co.Checkout = co.Checkout.quick(order.id)
    paid = checkout.pay(order)
    repo = Repo()
    repo.load(order.id)
    sys.stdout.write(order.describe())
    return 0 if paid else 1
