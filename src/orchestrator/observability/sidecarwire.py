"""The pipe between a process and its trace-export sidecar (``sidecar`` ↔ ``sidecarproc``): each frame
its length (4 bytes, big-endian), then its MessagePack; the ``Struct``s are the protocol. ``ToSidecar``
goes down the sidecar's standard input, ``FromSidecar`` comes back on its standard output.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import IO

import msgspec

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.report import ExportReport
from orchestrator.observability.tracestate import RunInfo

__all__ = [
    "Chunk",
    "Close",
    "Config",
    "Cut",
    "FromSidecar",
    "Grow",
    "Log",
    "Open",
    "Ready",
    "Report",
    "Spans",
    "ToSidecar",
    "read_frame",
    "write_frames",
]

_LENGTH = struct.Struct(">I")


class Config(msgspec.Struct, tag="config", array_like=True):
    config: ExportConfig


class Open(msgspec.Struct, tag="open", array_like=True):
    """A run's export starts: the first ``prior_bytes`` of its log were written before (a resumed run's)."""

    key: int
    run_dir: str
    info: RunInfo
    prior_bytes: int


class Grow(msgspec.Struct, tag="grow", array_like=True):
    """Fold the run's log lines that begin before byte ``through``."""

    key: int
    through: int


class Chunk(msgspec.Struct, tag="chunk", array_like=True):
    """Fold through ``through``, then: the role's model call streamed its first chunk at ``at_ns``."""

    key: int
    role_id: str
    at_ns: int
    through: int


class Cut(msgspec.Struct, tag="cut", array_like=True):
    """Fold through ``through``, then end the run's trace there."""

    key: int
    through: int


class Close(msgspec.Struct, tag="close", array_like=True):
    """Nothing more comes for this run (its listener is gone)."""

    key: int


class Spans(msgspec.Struct, tag="spans", array_like=True):
    """Finished spans, as JSON: their 128-bit trace ids do not fit a MessagePack integer."""

    json: bytes


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """The sidecar's exporter is set up (the SDK imported and configured), after ``cpu_seconds`` of CPU."""

    cpu_seconds: float


class Log(msgspec.Struct, tag="log", array_like=True):
    level: int
    logger: str
    message: str


class Report(msgspec.Struct, tag="report", array_like=True):
    report: ExportReport
    #: the sidecar's CPU time, every thread (``bench/otel_overhead.py`` reports it)
    cpu_seconds: float


ToSidecar = Config | Open | Grow | Chunk | Cut | Close | Spans
FromSidecar = Ready | Log | Report
_encode = msgspec.msgpack.Encoder().encode


def write_frames(pipe: IO[bytes], frames: Sequence[ToSidecar | FromSidecar]) -> None:
    """Write ``frames`` (each its length, then its MessagePack) and flush."""
    parts: list[bytes] = []
    for frame in frames:
        body = _encode(frame)
        parts += (_LENGTH.pack(len(body)), body)
    pipe.write(b"".join(parts))
    pipe.flush()


def read_frame(pipe: IO[bytes], decoder: msgspec.msgpack.Decoder) -> object | None:
    """The next frame, ``None`` at the end of the stream (a torn last frame included)."""
    head = pipe.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    body = pipe.read(size)
    return decoder.decode(body) if len(body) == size else None
