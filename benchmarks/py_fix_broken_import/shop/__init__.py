"""A tiny shop: prices of order lines and whole orders."""

from shop.pricing import line_total, order_total

__all__ = ["line_total", "order_total"]
