"""Small text helpers: casing and counting."""

import re

_WORD = re.compile(r"[A-Za-z0-9]+")


def title_case(text: str) -> str:
    """Every word capitalized, joined by single spaces."""
    return " ".join(word.capitalize() for word in _WORD.findall(text))


def snake_case(text: str) -> str:
    """Every word lower-cased, joined by underscores."""
    return "_".join(word.lower() for word in _WORD.findall(text))


def word_count(text: str) -> int:
    """Whitespace-separated words."""
    return len(text.split())


def char_count(text: str, *, spaces: bool = False) -> int:
    """Characters, leaving whitespace out unless ``spaces``."""
    return len(text) if spaces else sum(1 for ch in text if not ch.isspace())
