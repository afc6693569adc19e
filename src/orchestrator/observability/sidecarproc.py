"""The trace export's own process (``sidecar``): ``python -m orchestrator.observability.sidecarproc``.

It reads frames (``sidecar.ToSidecar``) from its standard input until it closes: the configuration first,
then runs' lines, folded by an in-process ``SpanSink`` and ``live.TraceListener`` exactly as the export
folds them without a sidecar. Its log records go back to the process that started it (``sidecar.Log``),
and so, at the end, does its ``ExportReport``. It ignores SIGINT: a Ctrl-C in a terminal reaches the whole
process group, and the sidecar ends with its input, once it has sent what it holds.

A plain blocking loop, not trio: this process only moves bytes from a pipe to the SDK's own threads.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO

import msgspec

from orchestrator.observability.foldinput import read_fold_events
from orchestrator.observability.live import TraceListener
from orchestrator.observability.report import ExportReport
from orchestrator.observability.sidecar import (
    Chunk,
    Config,
    Cut,
    Line,
    Log,
    Open,
    Ready,
    Report,
    Spans,
    ToSidecar,
    read_frame,
    write_frames,
)
from orchestrator.observability.sink import SpanSink
from orchestrator.observability.tracestate import SpanData

__all__ = ["main"]


class _Relay(logging.Handler):
    """Log records → ``Log`` frames to the process that started this one."""

    def __init__(self, pipe: IO[bytes]) -> None:
        super().__init__(logging.INFO)
        self.pipe = pipe
        self.guard = threading.Lock()
        self.setFormatter(logging.Formatter("%(message)s"))

    def send(self, frame: Log | Ready | Report) -> None:
        with self.guard:
            try:
                write_frames(self.pipe, [frame])
            except (OSError, ValueError):  # the other end is gone: nobody to tell
                pass

    def emit(self, record: logging.LogRecord) -> None:
        self.send(Log(record.levelno, record.name, self.format(record)))


def _serve(sink: SpanSink, frames: IO[bytes]) -> None:
    decoder = msgspec.msgpack.Decoder(ToSidecar)
    spans = msgspec.json.Decoder(list[SpanData])
    listeners: dict[int, TraceListener] = {}
    while (frame := read_frame(frames, decoder)) is not None:
        if isinstance(frame, Line):
            if (found := listeners.get(frame.key)) is not None:
                found.line(frame.line)
        elif isinstance(frame, Chunk):
            if (found := listeners.get(frame.key)) is not None:
                found.chunk(frame.role_id, frame.at_ns)
        elif isinstance(frame, Cut):
            if (found := listeners.get(frame.key)) is not None:
                found.cut_here()
        elif isinstance(frame, Open):
            for key in [key for key, known in listeners.items() if known.state.run_ended]:
                del listeners[key]  # a long-lived service's finished runs (the fold set it, nothing follows)
            log = Path(frame.run_dir) / "log.jsonl"
            prior = read_fold_events(log, capture_content=sink.capture_content, limit=frame.prior_bytes)
            listeners[frame.key] = TraceListener(sink, frame.info, prior)
        elif isinstance(frame, Spans):
            sink.submit(spans.decode(frame.json))


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    frames, out = sys.stdin.buffer, sys.stdout.buffer
    relay = _Relay(out)
    root = logging.getLogger()
    root.addHandler(relay)
    root.setLevel(logging.INFO)
    first = read_frame(frames, msgspec.msgpack.Decoder(ToSidecar))
    if not isinstance(first, Config):
        return 2  # not started by ``sidecar.SidecarSink``
    try:
        sink = SpanSink(first.config)
    except Exception as exc:  # e.g. an OTEL_BSP_* value the SDK refuses: the runs go on untraced
        logging.getLogger("orchestrator.observability").warning(
            "trace export is off: it could not start (%s: %s)", type(exc).__name__, exc
        )
        while frames.read(1 << 16):  # what is shipped is dropped, so the shipping process never waits
            pass
        relay.send(Report(ExportReport(submitted=0, exported=0), time.process_time()))
        return 0
    relay.send(Ready())
    try:
        _serve(sink, frames)
    finally:
        report = sink.close()
        relay.send(Report(report, time.process_time()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
