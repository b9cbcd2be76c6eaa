"""Money amounts in cents."""

from __future__ import annotations


def cents(amount: float) -> int:
    return round(amount * 100)


def format_price(value: int) -> str:
    return f"{value / 100:.2f}"


def append(items: list[int], value: int) -> list[int]:
    """A repository function named like a list method: ``items.append`` must not reach it."""
    return [*items, value]
