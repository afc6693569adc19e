"""``FlowIndex``: one run's flow model kept current by folding only the log lines appended since the
last poll.

``update`` reads from the byte offset it stopped at, folds every new *complete* line (a torn last line
waits until its newline lands) and remembers where each event's line sits, so a detail body can be
fetched later by reading that one line. A poll of a long run therefore costs the new bytes plus a
finalization, never a re-read or re-fold of the whole log.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.flow.adapter import finalize, fold
from orchestrator.flow.details import operation_details
from orchestrator.flow.model import InteractionModel
from orchestrator.flow.state import FlowState

__all__ = ["FlowIndex", "decode_line"]

_decoder = msgspec.json.Decoder(dict[str, Any])


def decode_line(line: bytes) -> dict[str, Any] | None:
    """One log line as an event dict, ``None`` when blank, corrupt or untyped (as ``read_events``)."""
    if not line.strip():
        return None
    try:
        record = _decoder.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    return record if isinstance(record.get("type"), str) else None


class FlowIndex:
    """The folded flow state of one run's ``log.jsonl`` plus where each folded event's line lives.

    Not thread-safe: serialize ``update``, ``model`` and ``details`` (e.g. call them from one task).
    """

    def __init__(self) -> None:
        #: total bytes this index has read from disk (for cost checks)
        self.bytes_read = 0
        self.path: Path | None = None
        self._reset()

    def _reset(self) -> None:
        self.state = FlowState()
        #: bytes read from the file so far (complete lines plus a held partial tail)
        self.read_to = 0
        self._tail = b""
        self._starts = array("q")
        self._lengths = array("q")

    @property
    def offset(self) -> int:
        """Bytes of complete lines consumed; everything before it is folded."""
        return self.read_to - len(self._tail)

    def update(self, log_path: Path) -> int:
        """Fold the complete lines appended since the last call; the number of new events.

        A log that shrank (replaced, not appended to) is re-read from the start.
        """
        if self.path is not None and log_path != self.path:
            self._reset()
        self.path = log_path
        try:
            with log_path.open("rb") as handle:
                size = handle.seek(0, 2)
                if size < self.read_to:
                    self._reset()
                handle.seek(self.read_to)
                data = handle.read(size - self.read_to)
        except FileNotFoundError:
            return 0
        self.read_to += len(data)
        self.bytes_read += len(data)
        buffer = self._tail + data
        end = buffer.rfind(b"\n") + 1
        self._tail = buffer[end:]
        base = self.read_to - len(buffer)
        before = self.state.events
        start = 0
        while start < end:
            stop = buffer.index(b"\n", start)
            event = decode_line(buffer[start:stop])
            if event is not None:
                self._starts.append(base + start)
                self._lengths.append(stop - start)
                fold(self.state, event)
            start = stop + 1
        return self.state.events - before

    def model(self, meta_status: str | None, now: str, *, window: int | None = None) -> InteractionModel:
        """The model of everything folded so far, windowed as ``finalize`` does (the state is untouched)."""
        return finalize(self.state, meta_status, now, window=window)

    def event_at(self, index: int) -> Mapping[str, Any] | None:
        """The ``index``-th folded event, read back from its line; ``None`` if it cannot be."""
        if self.path is None or not 0 <= index < len(self._starts):
            return None
        try:
            with self.path.open("rb") as handle:
                handle.seek(self._starts[index])
                return decode_line(handle.read(self._lengths[index]))
        except OSError:
            return None

    def details(self, operation_id: str) -> str | None:
        """The detail body of an operation; ``KeyError`` for an id not in the current model."""
        return operation_details(self, self.state, operation_id)
