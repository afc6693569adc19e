"""The trace export in a process of its own: this process ships each run's log lines there, and that
process (``python -m orchestrator.observability.sidecarproc``) folds them into spans and exports them with
the OpenTelemetry SDK exactly as an in-process ``SpanSink`` does.

Why a process: the fold, the SDK's span objects and above all its protobuf encoder (~30 µs a span) are
Python work under the interpreter lock; in the service's process that lock is the runs', the HTTP API's and
the UI stream's. Shipped away, the export costs this process an append per log line on the run's thread
and a write of the bytes to a pipe every ``_FLUSH_SECONDS`` on the sink's writer thread.

What crosses the pipe is length-prefixed MessagePack frames (``ToSidecar`` one way, ``FromSidecar`` the
other): the configuration first, then each run's ``Open`` (its folder, what the log does not say, and how
much of its log was written before: a resumed run's spans still open are folded from there), its lines,
first chunks and a ``Cut``; finished spans (the workflow server's tool calls); back come the sidecar's log
records (re-logged here, so they go where this process's logging goes) and, at the end, its
``ExportReport``. The sidecar ends when its standard input closes: ``close`` here, or this process's end,
whatever way it ends.

Never blocks a run: a full outbox (``_DEFAULT_BOUND`` frames) refuses what is handed to it, which cuts that
run's trace (``handover``); a sidecar that died or never started costs spans (counted as not folded, logged
once), not the run.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import msgspec

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.handover import RunTrace
from orchestrator.observability.report import ExportReport
from orchestrator.observability.tracestate import RunInfo, SpanData

__all__ = [
    "Chunk",
    "Config",
    "Cut",
    "FromSidecar",
    "Line",
    "Log",
    "Open",
    "Ready",
    "Report",
    "SidecarListener",
    "SidecarSink",
    "Spans",
    "ToSidecar",
    "read_frame",
    "write_frames",
]

logger = logging.getLogger("orchestrator.observability")
#: How often the writer thread ships what was handed over (the sidecar folds on its own schedule).
_FLUSH_SECONDS = 0.1
#: The outbox's bound in frames when the configuration does not set the queue size.
_DEFAULT_BOUND = 2048
#: How long ``close`` waits for the sidecar's report beyond ``shutdownTimeoutSeconds``: its start (the SDK's
#: import) may not be over yet.
_START_GRACE_SECONDS = 10.0
_LENGTH = struct.Struct(">I")
#: The pipe's buffer asked for: a flush's worth of lines of a busy run (1 MiB is Linux's default limit).
_PIPE_BYTES = 1 << 20


# --- the frames ---------------------------------------------------------------------------------------


class Config(msgspec.Struct, tag="config", array_like=True):
    config: ExportConfig


class Open(msgspec.Struct, tag="open", array_like=True):
    """A run's export starts: ``prior_bytes`` of its log were written before (a resumed run's)."""

    key: int
    run_dir: str
    info: RunInfo
    prior_bytes: int


class Line(msgspec.Struct, tag="line", array_like=True):
    key: int
    line: bytes


class Chunk(msgspec.Struct, tag="chunk", array_like=True):
    key: int
    role_id: str
    at_ns: int


class Cut(msgspec.Struct, tag="cut", array_like=True):
    key: int


class Spans(msgspec.Struct, tag="spans", array_like=True):
    """Finished spans, as JSON: their 128-bit trace ids do not fit a MessagePack integer."""

    json: bytes


class Log(msgspec.Struct, tag="log", array_like=True):
    level: int
    logger: str
    message: str


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """The sidecar's exporter is set up (the SDK imported and configured)."""


class Report(msgspec.Struct, tag="report", array_like=True):
    report: ExportReport
    #: the sidecar's CPU time, every thread (``bench/otel_overhead.py`` reports it)
    cpu_seconds: float


ToSidecar = Config | Open | Line | Chunk | Cut | Spans
FromSidecar = Log | Ready | Report
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


# --- this process's side ------------------------------------------------------------------------------


def _widen(pipe: IO[bytes] | None) -> None:
    """Give the pipe ``_PIPE_BYTES`` of buffer where the system lets us (Linux): a batch of lines then
    goes in one write, not in 64 KiB steps that each take the interpreter lock back from the runs."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if pipe is not None and set_size is not None:
        try:
            fcntl.fcntl(pipe.fileno(), set_size, _PIPE_BYTES)
        except OSError:  # above the system's limit (/proc/sys/fs/pipe-max-size): its default stays
            pass



class SidecarListener(RunTrace):
    """One run's live export, shipped to the sidecar."""

    def __init__(self, sidecar: SidecarSink, key: int) -> None:
        super().__init__(sidecar)
        self.sidecar = sidecar
        self.key = key

    def hand_line(self, line: bytes) -> bool:
        return self.sidecar.send(Line(self.key, line))

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        return self.sidecar.send(Chunk(self.key, role_id, at_ns))

    def hand_cut(self) -> None:
        self.sidecar.send(Cut(self.key), always=True)


class SidecarSink:
    """A process's trace export, run by a sidecar process: many runs may export through one; ``close``
    once at the end (the one blocking call, bounded; async callers run it in a worker thread)."""

    def __init__(self, config: ExportConfig, *, handoff: int | None = None) -> None:
        """``handoff``: the outbox's bound in frames (default: the processor's queue size in spans)."""
        self.config = config
        #: run-log events never shipped (a full outbox cut their run's trace, or the sidecar is gone)
        self.unfolded = 0
        #: the writer thread's CPU time (``bench/otel_overhead.py`` reports it)
        self.busy_seconds = 0.0
        #: the sidecar's CPU time, known once it reported (``close``)
        self.sidecar_cpu_seconds = 0.0
        self._bound = handoff or config.max_queue_size or _DEFAULT_BOUND
        self._outbox: deque[ToSidecar] = deque([Config(config)])
        self._handed = 1
        self._shipped = 0
        self._keys = itertools.count(1)
        self._closed = False
        self._gone = False  # the pipe broke: the sidecar died (or never started)
        self._report: ExportReport | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "orchestrator.observability.sidecarproc"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=dict(os.environ),
            start_new_session=True,  # a Ctrl-C in a terminal is for this process: the sidecar ends with its input
        )
        _widen(self._process.stdin)
        self._writer = threading.Thread(target=self._write, name="otel-sidecar-write", daemon=True)
        self._reader = threading.Thread(target=self._read, name="otel-sidecar-read", daemon=True)
        self._writer.start()
        self._reader.start()

    @property
    def capture_content(self) -> bool:
        return self.config.capture_content

    @property
    def pending(self) -> int:
        """Frames handed over and not shipped yet (the bench waits for 0)."""
        return self._handed - self._shipped

    def listener(self, run_dir: Path, info: RunInfo) -> SidecarListener:
        """The listener for the run in ``run_dir``: the sidecar folds its log written so far first."""
        try:
            prior = (run_dir / "log.jsonl").stat().st_size
        except OSError:
            prior = 0
        key = next(self._keys)
        self.send(Open(key, str(run_dir), info, prior), always=True)
        return SidecarListener(self, key)

    def submit(self, spans: Sequence[SpanData]) -> None:
        """Ship finished spans; never blocks (a full outbox drops them: the sidecar never counts them)."""
        self.send(Spans(msgspec.json.encode(list(spans))))

    def send(self, frame: ToSidecar, *, always: bool = False) -> bool:
        """Append ``frame`` to the outbox; ``False`` (a line counted in ``unfolded``) when it is full or the
        sidecar is gone, unless ``always``."""
        if self._closed or self._gone or (not always and len(self._outbox) >= self._bound):
            if type(frame) is Line:
                self.unfolded += 1
            return False
        self._handed += 1
        self._outbox.append(frame)
        return True

    def _write(self) -> None:
        """The writer thread: every ``_FLUSH_SECONDS`` (and once at ``close``), the outbox → the pipe."""
        pipe = self._process.stdin
        assert pipe is not None
        while True:
            stopping = self._stop.wait(_FLUSH_SECONDS)
            started = time.thread_time()
            batch: list[ToSidecar] = []
            while self._outbox:
                batch.append(self._outbox.popleft())
            if batch and not self._gone:
                try:
                    write_frames(pipe, batch)
                except (OSError, ValueError):  # the sidecar is gone: what it did not get is lost, counted
                    self._lost(sum(type(frame) is Line for frame in batch))
            self._shipped += len(batch)
            self.busy_seconds += time.thread_time() - started
            if stopping:
                break
        try:
            pipe.close()  # the sidecar's end of input: it sends what it holds, reports and ends
        except OSError:
            pass

    def _lost(self, lines: int) -> None:
        self.unfolded += lines
        if not self._gone:
            self._gone = True
            logger.warning("the trace export's process ended early; spans are dropped from here (the run goes on)")

    def _read(self) -> None:
        """The reader thread: the sidecar's log records, re-logged here, and its report."""
        pipe = self._process.stdout
        assert pipe is not None
        decoder = msgspec.msgpack.Decoder(FromSidecar)
        while (frame := read_frame(pipe, decoder)) is not None:
            if isinstance(frame, Log):
                logging.getLogger(frame.logger).log(frame.level, "%s", frame.message)
            elif isinstance(frame, Ready):
                self._ready.set()
            elif isinstance(frame, Report):
                self._report = frame.report
                self.sidecar_cpu_seconds = frame.cpu_seconds
        if self._report is None and not self._closed:
            self._lost(0)

    def report(self) -> ExportReport:
        """What became of the spans so far: the sidecar's figures are known once it reported."""
        got = self._report or ExportReport(submitted=0, exported=0)
        return ExportReport(submitted=got.submitted, exported=got.exported, unfolded=got.unfolded + self.unfolded)

    def close(self) -> ExportReport:
        """Ship what is left, then wait for the sidecar to send what it holds (at most
        ``shutdownTimeoutSeconds``, plus its start when it has not started yet), report and end."""
        if not self._closed:
            self._closed = True
            self._stop.set()
            deadline = time.monotonic() + self.config.shutdown_timeout_seconds + _START_GRACE_SECONDS
            self._writer.join(max(0.0, deadline - time.monotonic()))
            self._reader.join(max(0.0, deadline - time.monotonic()))  # it ends with the sidecar's output
            if self._reader.is_alive() or self._writer.is_alive():
                logger.warning("the trace export's process did not end in time: the spans it held are lost")
                self._process.kill()
                self._reader.join(5)
            self._process.wait()
            for pipe in (self._process.stdin, self._process.stdout):
                if pipe is not None and not pipe.closed:
                    try:
                        pipe.close()
                    except OSError:
                        pass
        return self.report()

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the sidecar's exporter is set up (a bench starts measuring then); ``False`` on timeout
        or when it could not start. Never needed to export: what is shipped before waits in the pipe."""
        return self._ready.wait(timeout)

    @property
    def pid(self) -> int:
        """The sidecar's process id."""
        return self._process.pid
