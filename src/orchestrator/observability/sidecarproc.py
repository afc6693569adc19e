"""The trace export's own process (``sidecar``): ``python -m orchestrator.observability.sidecarproc``.

It reads frames (``sidecarwire.ToSidecar``) from its standard input until it closes: the configuration first,
then, per run, how far its log has grown; it reads the new lines from the run's ``log.jsonl`` and folds
them with an in-process ``SpanSink`` and ``live.TraceListener``, exactly as the export folds them without a
sidecar. Its log records go back to the process that started it (``sidecarwire.Log``),
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
from orchestrator.observability.report import ExportReport
from orchestrator.observability.runfold import TraceListener
from orchestrator.observability.sidecarwire import (
    Chunk,
    Close,
    Config,
    Cut,
    Grow,
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


class _RunLog:
    """One run's export here: its listener, and its log file read up to where the other process says it
    has grown (the log is append-only: what is there stays)."""

    def __init__(self, listener: TraceListener, path: Path, position: int) -> None:
        self.listener = listener
        self.path = path
        self.position = position
        self.file: IO[bytes] | None = None

    def grow(self, through: int) -> None:
        """Hand each line that begins before ``through`` to the fold, whole (a line is written whole
        before its listener hears of it)."""
        if through <= self.position:
            return
        if self.file is None:
            try:
                self.file = self.path.open("rb")  # kept open: the folder may be moved, the lines stay
            except OSError:  # gone already: its lines cannot be folded
                self.listener.cut_here()
                return
        self.file.seek(self.position)
        data = self.file.read(through - self.position)
        if data and not data.endswith(b"\n"):
            data += self.file.readline()  # ``through`` counted lines as handed over: end on a whole one
        self.position += len(data)
        for line in data.split(b"\n"):
            if line:
                self.listener.line(line)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


def _serve(sink: SpanSink, frames: IO[bytes]) -> None:
    decoder = msgspec.msgpack.Decoder(ToSidecar)
    spans = msgspec.json.Decoder(list[SpanData])
    runs: dict[int, _RunLog] = {}
    while (frame := read_frame(frames, decoder)) is not None:
        if isinstance(frame, Grow | Chunk | Cut | Close):
            run = runs.get(frame.key)
            if run is None:
                continue
            if isinstance(frame, Close):
                run.close()
                del runs[frame.key]
                continue
            run.grow(frame.through)
            if isinstance(frame, Chunk):
                run.listener.chunk(frame.role_id, frame.at_ns)
            elif isinstance(frame, Cut):
                run.listener.cut_here()
        elif isinstance(frame, Open):
            if (opened := runs.pop(frame.key, None)) is not None:  # opened twice after a restart: the last wins
                opened.close()
            log = Path(frame.run_dir) / "log.jsonl"
            prior = read_fold_events(log, capture_content=sink.capture_content, limit=frame.prior_bytes)
            runs[frame.key] = _RunLog(TraceListener(sink, frame.info, prior), log, frame.prior_bytes)
        elif isinstance(frame, Spans):
            sink.submit(spans.decode(frame.json))
    for run in runs.values():
        run.close()


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
    relay.send(Ready(time.process_time()))
    try:
        _serve(sink, frames)
    finally:
        report = sink.close()
        relay.send(Report(report, time.process_time()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
