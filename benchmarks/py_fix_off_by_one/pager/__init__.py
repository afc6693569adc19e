"""Split a list of items into pages of a fixed size."""


def page_count(total_items: int, page_size: int) -> int:
    """How many pages ``total_items`` items fill at ``page_size`` items per page."""
    return (total_items + page_size - 1) // page_size


def page(items: list, number: int, page_size: int) -> list:
    """The items on page ``number``; pages are numbered from 1."""
    start = number * page_size
    return items[start : start + page_size]
