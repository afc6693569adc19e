"""URL slugs."""

import re

_SEPARATORS = re.compile(r"[^a-z0-9]+")


def slugify(text: str) -> str:
    """Lower-case ``text``, turn every run of non-alphanumerics into one hyphen, trim the ends."""
    return _SEPARATORS.sub("-", text.lower()).strip("-")
