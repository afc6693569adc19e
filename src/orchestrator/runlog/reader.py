"""Tolerant reading of ``log.jsonl``: every complete, parsable line, in order.

A torn final line (a crash mid-append) or a corrupt line is skipped, never fatal: the log is evidence,
and one bad line must not hide the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

__all__ = ["decode_line", "last_event_time", "read_events"]

#: How much of a log's end ``last_event_time`` reads (an event line is far shorter, bar huge payloads).
TAIL_BYTES = 256 * 1024

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


def last_event_time(path: Path) -> str | None:
    """The ``timestamp`` of the log's last readable event within its final ``TAIL_BYTES`` (what a run
    was doing when its process stopped); ``None`` when there is none."""
    try:
        with path.open("rb") as log:
            size = log.seek(0, 2)
            log.seek(max(0, size - TAIL_BYTES))
            tail = log.read()
    except FileNotFoundError:
        return None
    for line in reversed(tail.split(b"\n")):
        event = decode_line(line)
        if event is not None and isinstance(event.get("timestamp"), str):
            return event["timestamp"]
    return None
