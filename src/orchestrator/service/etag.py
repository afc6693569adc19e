"""Conditional GETs: an answer's ETag and whether a request's ``If-None-Match`` already has it (pure).

The ETag is a digest of the encoded body, so it is right for any run — a finished run's answers never
change, so every poll after the first is a ``304`` with no body; a live run's change with each event.
"""

from __future__ import annotations

from hashlib import blake2b

__all__ = ["etag_of", "matches"]


def etag_of(body: bytes) -> str:
    """A strong entity tag for ``body`` (quoted, as the header carries it)."""
    return '"' + blake2b(body, digest_size=12).hexdigest() + '"'


def matches(if_none_match: str | None, etag: str) -> bool:
    """True when the ``If-None-Match`` header lists ``etag`` (or is ``*``); weak prefixes compare equal."""
    if not if_none_match:
        return False
    for candidate in if_none_match.split(","):
        tag = candidate.strip()
        if tag == "*" or tag.removeprefix("W/") == etag:
            return True
    return False
