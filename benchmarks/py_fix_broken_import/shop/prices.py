"""Prices in cents, so that sums stay exact."""


def line_total(unit_cents: int, quantity: int) -> int:
    """The price of ``quantity`` units."""
    return unit_cents * quantity


def order_total(lines: list[tuple[int, int]]) -> int:
    """The price of an order given as ``(unit_cents, quantity)`` lines."""
    return sum(line_total(unit, qty) for unit, qty in lines)
