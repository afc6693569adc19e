"""The stored session indexes in a ``session.json``'s raw bytes, read without decoding the whole file.

``SessionStore``'s scan uses this on every candidate file: a small Struct that decodes only
``sessionIndex`` and the embedded children, with a loose fallback for files that do not fit it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from orchestrator.workflow.session.sessionfile import SlotPath

__all__ = ["stored_indexes"]


class _ProbeEntry(msgspec.Struct):
    state: _Probe | None = None


class _Probe(msgspec.Struct, rename="camel"):
    """Just enough of a session file to list its stored indexes (scan fast path)."""

    session_index: Any = None
    triggered_workflows: list[_ProbeEntry] = msgspec.field(default_factory=list)


_PROBE = msgspec.json.Decoder(_Probe)


def _probe_indexes(probe: _Probe, path: SlotPath = ()) -> Iterator[tuple[Any, SlotPath]]:
    yield probe.session_index, path
    for slot, entry in enumerate(probe.triggered_workflows):
        if entry.state is not None:
            yield from _probe_indexes(entry.state, (*path, slot))


def _loose_indexes(obj: Any, path: SlotPath = ()) -> Iterator[tuple[Any, SlotPath]]:
    if not isinstance(obj, dict):
        return
    yield obj.get("sessionIndex"), path
    entries = obj.get("triggeredWorkflows")
    if isinstance(entries, list):
        for slot, entry in enumerate(entries):
            if isinstance(entry, dict):
                yield from _loose_indexes(entry.get("state"), (*path, slot))


def stored_indexes(data: bytes) -> list[tuple[Any, SlotPath]]:
    """Every (stored index, slot path) in raw file bytes; unparseable files have none."""
    try:
        return list(_probe_indexes(_PROBE.decode(data)))
    except (msgspec.MsgspecError, RecursionError):
        pass
    try:
        return list(_loose_indexes(msgspec.json.decode(data)))
    except (msgspec.MsgspecError, RecursionError):
        return []
