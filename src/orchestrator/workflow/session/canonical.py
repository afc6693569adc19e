"""Canonical JSON for ``session.json``: the exact bytes that are written and sealed.

Rules: 2-space indent, no trailing newline; top-level object keys in ``SESSION_KEY_ORDER`` first, then
the rest sorted; nested object keys sorted; arrays keep their order; an optional Struct field holding
``None`` is absent ("undefined dropped"); non-finite numbers are refused; an integral float is written
as an integer (``3.0`` → ``3``). The output is a pure function of the value.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import msgspec

__all__ = ["SESSION_KEY_ORDER", "CanonicalJsonError", "canonical_bytes", "to_plain"]

SESSION_KEY_ORDER: tuple[str, ...] = (
    "schemaVersion",
    "status",
    "workflowId",
    "workflowVersion",
    "agentId",
    "sessionIndex",
    "planningFolderPath",
    "currentActivity",
    "currentTechnique",
    "condition",
    "activeCheckpoint",
    "seq",
    "ts",
    "startedAt",
    "completedActivities",
    "skippedActivities",
    "variables",
    "checkpointResponses",
    "history",
    "triggeredWorkflows",
    "parentSession",
)
_RANK = {key: rank for rank, key in enumerate(SESSION_KEY_ORDER)}


class CanonicalJsonError(ValueError):
    """A value that has no canonical JSON form (non-finite number, non-string key, foreign type)."""


class _Unencodable(Exception):
    """Internal: raised at the bad value, collecting its ``$.path`` on the way out."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


@cache
def _struct_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(attribute, wire name) of a Struct class, sorted by wire name."""
    return tuple(sorted(((f.name, f.encode_name) for f in msgspec.structs.fields(cls)), key=lambda f: f[1]))


def _key(key: object) -> str:
    if type(key) is not str:
        raise _Unencodable(f"object key {key!r} is not a string")
    return key


def _plain(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        if not math.isfinite(value):
            raise _Unencodable(f"non-finite number {value!r}")
        return int(value) if value.is_integer() else value
    if kind is dict:
        out = {}
        for key in sorted(value, key=_key):
            try:
                out[key] = _plain(value[key])
            except _Unencodable as bad:
                bad.path.append(f".{key}")
                raise
        return out
    if kind is list or kind is tuple:
        try:
            return [_plain(item) for item in value]
        except _Unencodable as bad:
            for n, item in enumerate(value):
                try:
                    _plain(item)
                except _Unencodable:
                    bad.path.append(f"[{n}]")
                    break
            raise
    if isinstance(value, msgspec.Struct):
        out = {}
        for attr, key in _struct_fields(kind):
            item = getattr(value, attr)
            if item is not None:
                try:
                    out[key] = _plain(item)
                except _Unencodable as bad:
                    bad.path.append(f".{key}")
                    raise
        return out
    if isinstance(value, str):  # subclasses (str/int enums and the like) as their base type
        return str.__str__(value)
    for base in (bool, int, float):
        if isinstance(value, base):
            return _plain(base(value))
    raise _Unencodable(f"value of type {kind.__name__} is not JSON")


def to_plain(value: Any) -> Any:
    """``value`` as JSON builtins with sorted object keys; Structs drop their ``None`` fields.

    Raises ``CanonicalJsonError`` naming the ``$.path`` of the offending value.
    """
    try:
        return _plain(value)
    except _Unencodable as bad:
        raise CanonicalJsonError(f"{bad.reason} at ${''.join(reversed(bad.path))}") from None


def _top_ordered(plain: dict[str, Any]) -> dict[str, Any]:
    keys = sorted(plain, key=lambda k: (0, _RANK[k], "") if k in _RANK else (1, 0, k))
    return {key: plain[key] for key in keys}


def canonical_bytes(value: Any) -> bytes:
    """The canonical UTF-8 bytes of ``value`` (usually a ``SessionFile``). Raises ``CanonicalJsonError``."""
    plain = to_plain(value)
    if isinstance(plain, dict):
        plain = _top_ordered(plain)
    try:
        compact = msgspec.json.encode(plain)
    except (msgspec.EncodeError, UnicodeEncodeError, OverflowError) as exc:
        raise CanonicalJsonError(f"cannot encode value as JSON: {exc}") from None
    return msgspec.json.format(compact, indent=2)
