"""Append-only ``log.jsonl`` writer with the logging-level filter wrapped around the append.

One reused msgspec encoder, one ``os.write`` of a whole line per event on an ``O_APPEND`` descriptor, so
a crash leaves at most one torn final line (readers skip it) and never interleaves two events. A
``Redactor`` is the second line of secret-keeping: an encoded line that holds a known secret value is
rewritten with ``<redacted>`` before it is written or shown to a listener (the engine already redacts
tool output where it enters the conversation; this catches a secret from anywhere else, such as a task).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import msgspec
from msgspec import UNSET

from orchestrator.config.secrets import Redactor
from orchestrator.runlog.events import LlmCall, RunEvent, ToolResultEvent
from orchestrator.vocabulary import DEFAULT_LOG_LEVEL, LogLevel

__all__ = ["RunLog", "apply_level", "utc_timestamp"]


def utc_timestamp() -> str:
    """ISO-8601 UTC timestamp with milliseconds, as every event and meta file carries."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def apply_level(event: RunEvent, level: LogLevel) -> RunEvent:
    """The ``standard`` level's two slimming rules; every other event passes unchanged.

    - ``llm_call`` loses ``sent``, ``received`` and ``sentFrom``.
    - ``tool_result`` loses ``result``.
    """
    if level == "full":
        return event
    if isinstance(event, LlmCall):
        slim = msgspec.structs.replace(event.payload, sent=UNSET, received=UNSET, sent_from=UNSET)
        return msgspec.structs.replace(event, payload=slim)
    if isinstance(event, ToolResultEvent):
        return msgspec.structs.replace(event, payload=msgspec.structs.replace(event.payload, result=UNSET))
    return event


class RunLog:
    """The run's event log. ``emit`` is the single funnel every event goes through.

    ``emit`` is synchronous and atomic per event (one ``write`` of a complete line); it never awaits,
    so it cannot be interrupted by cancellation half-way. A listener may itself cause an ``emit``
    (the nested event is written after the one being delivered). ``listeners`` see each event as written
    (after the level filter) — used by the service for live views; a listener must not raise.
    ``line_listeners`` (called first) see the event and its line as written, as immutable ``bytes`` that
    may cross to another thread: the trace export folds them there (docs/observability.md).
    """

    def __init__(self, path: Path, level: LogLevel = DEFAULT_LOG_LEVEL, redactor: Redactor | None = None) -> None:
        self.path = path
        self.level: LogLevel = level
        self.redactor = redactor or Redactor()
        self._encoder = msgspec.json.Encoder()
        self._buffer = bytearray(4096)
        self._fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        self._seal_torn_tail()
        self.count = 0
        self.listeners: list[Callable[[RunEvent], None]] = []
        self.line_listeners: list[Callable[[RunEvent, bytes], None]] = []

    def _seal_torn_tail(self) -> None:
        """A previous process killed mid-append left a partial last line: end it, so the next event
        starts on a line of its own (the torn line stays, and readers skip it)."""
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")

    def emit(self, event: RunEvent, *, redacted: bool = False) -> None:
        """Append one event. ``redacted``: the caller already ran this event's content through the same
        redactor (the engine's tool-result boundary), so the scan is skipped."""
        event = apply_level(event, self.level)
        self._encoder.encode_into(event, self._buffer)
        if not redacted and self.redactor.found_in(self._buffer):
            event = self._redacted(event)
        self._buffer.extend(b"\n")
        with memoryview(self._buffer) as line:
            written = 0
            while written < len(line):
                written += os.write(self._fd, line[written:])
        self.count += 1
        if self.line_listeners:
            written_line = bytes(self._buffer)
            for line_listener in self.line_listeners:
                line_listener(event, written_line)
        for listener in self.listeners:
            listener(event)

    def _redacted(self, event: RunEvent) -> RunEvent:
        """The event with every secret in its strings replaced (rare path: a secret was found); the
        buffer holds its encoding."""
        plain = self.redactor.redact_value(msgspec.json.decode(self._buffer))
        self._encoder.encode_into(plain, self._buffer)
        try:
            return msgspec.json.decode(self._buffer, type=type(event))
        except msgspec.ValidationError:  # a "secret" equal to an enum value: the line is still clean
            return event

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RunLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
