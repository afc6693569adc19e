"""Small text helpers."""

from textkit.core import char_count, snake_case, title_case, word_count

__all__ = ["char_count", "snake_case", "title_case", "word_count"]
