"""Tolerant reading of ``log.jsonl``: every complete, parsable line, in order.

A torn final line (a crash mid-append) or a corrupt line is skipped, never fatal: the log is evidence,
and one bad line must not hide the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

__all__ = ["decode_line", "read_events"]

_decoder = msgspec.json.Decoder(dict[str, Any])


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One log line as an event dict; ``None`` when blank, corrupt or without a string ``type``."""
    if not line.strip():
        return None
    try:
        record = _decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return record if isinstance(record.get("type"), str) else None


def read_events(path: Path) -> list[dict[str, Any]]:
    """All events of a log as dicts (``timestamp``, ``type``, ``payload``); ``[]`` when absent."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [event for line in data.split(b"\n") if (event := decode_line(line)) is not None]
