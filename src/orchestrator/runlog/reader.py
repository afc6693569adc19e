"""Tolerant reading of ``log.jsonl``: every complete, parsable line, in order.

A torn final line (a crash mid-append) or a corrupt line is skipped, never fatal: the log is evidence,
and one bad line must not hide the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

__all__ = ["read_events"]

_decoder = msgspec.json.Decoder(dict[str, Any])


def read_events(path: Path) -> list[dict[str, Any]]:
    """All events of a log as dicts (``timestamp``, ``type``, ``payload``); ``[]`` when absent."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    events: list[dict[str, Any]] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = _decoder.decode(line)
        except (msgspec.DecodeError, RecursionError):
            continue
        if isinstance(record.get("type"), str):
            events.append(record)
    return events
