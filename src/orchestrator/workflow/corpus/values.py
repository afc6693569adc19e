"""Value semantics shared by structured conditions and ``when`` expressions.

Mirrors the reference's JavaScript behaviour: dotted paths read *absent* (``MISSING``, JavaScript
``undefined``) through a missing key or a non-container; ``==``/``!=`` are strict (no coercion between
booleans, numbers, strings and null; absent equals nothing); relational operators compare numbers or
strings reading as a finite number and are false otherwise; truthiness is JavaScript's (empty lists and
objects are truthy).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["MISSING", "comparable_number", "compare", "js_truthy", "lookup_path", "strict_equals"]


class _Missing:
    """The absent value (JavaScript ``undefined``): distinct from ``None`` (``null``)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Any = _Missing()

# --------------------------------------------------------------------------------------------------
# Value semantics
# --------------------------------------------------------------------------------------------------

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_RADIX = re.compile(r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)")
_RADIX_BASE = {"x": 16, "o": 8, "b": 2}


def lookup_path(bag: Mapping[str, Any], path: str) -> Any:
    """The value at dotted ``path`` in ``bag``, or ``MISSING``. Lists are indexed by decimal segments."""
    current: Any = bag
    for part in path.split("."):
        if isinstance(current, Mapping):
            if part not in current:
                return MISSING
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and part.isascii():
            index = int(part)
            if index >= len(current):
                return MISSING
            current = current[index]
        else:
            return MISSING
    return current


def comparable_number(value: Any) -> float | None:
    """The finite number ``value`` stands for in a relational comparison, else ``None``.

    Numbers count when finite; strings count when (trimmed, non-blank) they read as a JavaScript numeric
    literal; booleans, null, absent values and everything else do not.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) < 2**1023 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if _DECIMAL.fullmatch(text):
            number = float(text)
            return number if math.isfinite(number) else None
        radix = _RADIX.fullmatch(text)
        if radix:
            number = float(int(radix.group(1)[1:], _RADIX_BASE[radix.group(1)[0].lower()]))
            return number if math.isfinite(number) else None
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "object"


def strict_equals(actual: Any, expected: Any) -> bool:
    """JavaScript ``===`` between a bag value and a literal: same kind and same value (NaN never equal)."""
    if actual is MISSING or expected is MISSING:
        return actual is MISSING and expected is MISSING
    kind = _kind(actual)
    if kind != _kind(expected):
        return False
    if kind == "object":
        return actual is expected
    return bool(actual == expected)


def js_truthy(value: Any) -> bool:
    if value is MISSING or value is None or value is False:
        return False
    if isinstance(value, bool):
        return True
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def compare(actual: Any, op: str, expected: Any) -> bool:
    if op == "==":
        return strict_equals(actual, expected)
    if op == "!=":
        return not strict_equals(actual, expected)
    left = comparable_number(actual)
    right = comparable_number(expected)
    if left is None or right is None:
        return False
    if op == ">":
        return left > right
    if op == "<":
        return left < right
    if op == ">=":
        return left >= right
    if op == "<=":
        return left <= right
    return False
