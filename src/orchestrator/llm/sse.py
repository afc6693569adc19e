"""Incremental Server-Sent-Events decoder (sans-IO): bytes in via ``feed``, events out.

Handles any chunking, CRLF/LF/CR line endings, comment lines, multi-line ``data`` and a missing final
blank line (``flush``). No I/O, no trio.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SseDecoder", "SseEvent"]


class SseEvent(NamedTuple):
    event: str
    data: str


class SseDecoder:
    """Feed raw stream bytes; get complete events. Undecodable UTF-8 is replaced, never fatal."""

    def __init__(self) -> None:
        self._pending = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[SseEvent]:
        self._pending += chunk
        events: list[SseEvent] = []
        while True:
            cut = _line_end(self._pending)
            if cut is None:
                break
            end, width = cut
            line = self._pending[:end].decode("utf-8", "replace")
            self._pending = self._pending[end + width :]
            event = self._line(line)
            if event is not None:
                events.append(event)
        return events

    def flush(self) -> list[SseEvent]:
        """End of stream: a last event without its blank line is still delivered."""
        events = self.feed(b"\n") if self._pending else []
        if self._data:
            events.append(SseEvent(self._event or "message", "\n".join(self._data)))
            self._event, self._data = "", []
        return events

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            event = SseEvent(self._event or "message", "\n".join(self._data))
            self._event, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            self._event = value
        elif field == "data":
            self._data.append(value)
        return None


def _line_end(buffer: bytes) -> tuple[int, int] | None:
    """Position and width of the first line terminator, or None when no complete line is buffered.

    A trailing lone CR is held back: it may be the first half of a CRLF split across chunks.
    """
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr == -1 and lf == -1:
        return None
    if cr == -1 or (lf != -1 and lf < cr):
        return lf, 1
    if cr + 1 < len(buffer):
        return cr, 2 if buffer[cr + 1 : cr + 2] == b"\n" else 1
    return None
