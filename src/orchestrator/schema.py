"""Base Structs that set the project's msgspec policy in one place.

Every file and wire format is a Struct deriving from one of these:

- ``Base``: keyword-only, optional fields omitted when at their default (so "omitted, never null"
  holds by construction), camelCase on the wire.
- ``StrictBase``: ``Base`` plus ``forbid_unknown_fields``: a typo in a strict file fails the load with
  msgspec's ``$.path`` naming the key.
"""

from __future__ import annotations

import msgspec

__all__ = ["Base", "StrictBase"]


class Base(msgspec.Struct, kw_only=True, omit_defaults=True, rename="camel"):
    """Lenient base: unknown keys are ignored."""


class StrictBase(Base, forbid_unknown_fields=True):
    """Strict base: unknown keys are rejected, naming the key and its path."""
