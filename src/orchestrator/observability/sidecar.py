"""The trace export in a process of its own: this process tells it how far each run's log has grown, and
that process (``python -m orchestrator.observability.sidecarproc``) reads the new lines from the log file,
folds them into spans and exports them with the OpenTelemetry SDK exactly as an in-process ``SpanSink``
does.

Why a process: the decode, the fold, the SDK's span objects and above all its protobuf encoder (~30 µs a
span) are Python work under the interpreter lock, and in the service's process that lock is the runs', the
HTTP API's and the UI stream's. Why the file: every line handed to a listener is already written to the
run's ``log.jsonl`` (``runlog/writer.py:RunLog``), so what crosses the pipe is a position, not the line:
on the run's thread a listener adds the line's length to its run's position (``_Progress``); every
``_FLUSH_SECONDS`` the writer thread ships each run's new position (``Grow``). The live export folds the
log's own bytes, as ``export-trace`` does afterwards.

The frames (``sidecarwire``) are length-prefixed MessagePack (``ToSidecar`` one way, ``FromSidecar``
the other): the configuration first; per run its ``Open`` (the run's folder, what the log does not say,
and the log's size when the listener started: a resumed run's spans still open are folded from what was
written before), ``Grow``, a model call's first streamed ``Chunk`` and a ``Cut`` (each saying how far the
log had grown then, so the sidecar folds up to there first: the order of the run's thread is kept), and
``Close`` once the listener is gone; finished spans (the workflow server's tool calls). Back come the
sidecar's ``Ready``, its log records (re-logged here, so they go where this process's logging goes) and, at
the end, its ``ExportReport``. The sidecar (``sidecarchild``) ends when its standard input closes:
``close`` here, or this process's end, whatever way it ends.

Never blocks a run: a full outbox (``_DEFAULT_BOUND`` frames: chunks and spans) refuses what is handed to
it, which cuts that run's trace (``handover``). A sidecar that dies is started again, within a limit
(``SidecarSink``); past it the export stops, and the lines not shipped are counted as not folded.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.handover import RunTrace
from orchestrator.observability.report import ExportReport
from orchestrator.observability.sidecarchild import SidecarChild
from orchestrator.observability.sidecarwire import (
    Chunk,
    Close,
    Config,
    Cut,
    FromSidecar,
    Grow,
    Log,
    Open,
    Ready,
    Report,
    Spans,
    ToSidecar,
)
from orchestrator.observability.tracestate import RunInfo, SpanData

__all__ = ["SidecarListener", "SidecarSink"]

logger = logging.getLogger("orchestrator.observability")
#: How often the writer thread ships the runs' positions (the sidecar folds on its own schedule).
_FLUSH_SECONDS = 0.1
#: The outbox's bound in frames when the configuration does not set the queue size.
_DEFAULT_BOUND = 2048
#: How long ``close`` waits for the sidecar's report beyond ``shutdownTimeoutSeconds``: its start (the SDK's
#: import) may not be over yet.
_START_GRACE_SECONDS = 10.0
#: A sidecar that dies is started again at most this many times within the window, then the export stops.
_RESTARTS = 3
_RESTART_WINDOW_SECONDS = 600


@dataclass
class _Progress:
    """How far a run's log has grown (the run's thread writes ``through``) and what was shipped of it (the
    writer thread's); ``closed`` once its listener is gone. ``run_dir`` and ``info`` open it again in a
    restarted sidecar."""

    key: int
    run_dir: str
    info: RunInfo
    through: int
    shipped: int
    #: lines handed over, and how many of them a shipped ``through`` covers
    lines: int = 0
    shipped_lines: int = 0
    closed: bool = False

    def close(self) -> None:
        self.closed = True

    def opening(self) -> Open:
        """Its ``Open`` for a sidecar that has not seen it: what was shipped is folded silently there."""
        return Open(self.key, self.run_dir, self.info, self.shipped)


class SidecarListener(RunTrace):
    """One run's live export through the sidecar: a line costs an addition."""

    def __init__(self, sidecar: SidecarSink, progress: _Progress) -> None:
        super().__init__(sidecar)
        self.sidecar = sidecar
        self.progress = progress

    def hand_line(self, line: bytes) -> bool:
        if self.sidecar.gone:
            self.sidecar.unfolded += 1
            return False
        self.progress.through += len(line)
        self.progress.lines += 1
        return True

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        return self.sidecar.send(Chunk(self.progress.key, role_id, at_ns, self.progress.through))

    def hand_cut(self) -> None:
        self.sidecar.send(Cut(self.progress.key, self.progress.through), always=True)


class SidecarSink:
    """A process's trace export, run by a sidecar process: many runs may export through one; ``close``
    once at the end (the one blocking call, bounded; async callers run it in a worker thread).

    A sidecar that dies is started again (at most ``_RESTARTS`` times in ``_RESTART_WINDOW_SECONDS``): the
    new one opens each run again at what was shipped to the old one, folding that silently as a resumed run's
    log, then goes on from there; the log holds every line meanwhile. The spans the old one held unsent are
    lost. Past the limit the export stops (``gone``): each later line is counted as not folded."""

    def __init__(self, config: ExportConfig, *, handoff: int | None = None) -> None:
        """``handoff``: the outbox's bound in frames (default: the processor's queue size in spans)."""
        self.config = config
        #: run-log events never folded here (the sidecar is gone, or a full outbox cut their run's trace)
        self.unfolded = 0
        #: the writer thread's CPU time (``bench/otel_overhead.py`` reports it)
        self.busy_seconds = 0.0
        #: the sidecar's CPU time, known once it reported (``close``), and the part its start took
        self.sidecar_cpu_seconds = 0.0
        self.sidecar_start_cpu_seconds = 0.0
        #: the sidecar died past the restart limit: the export has stopped
        self.gone = False
        #: sidecars started again after one died
        self.restarts = 0
        self._restarted_at: deque[float] = deque()
        self._bound = handoff or config.max_queue_size or _DEFAULT_BOUND
        self._outbox: deque[ToSidecar] = deque()
        self._runs: dict[int, _Progress] = {}
        self._keys = itertools.count(1)
        self._closed = False
        self._report: ExportReport | None = None
        self._stop = threading.Event()
        self._child = self._start()
        self._writer = threading.Thread(target=self._write, name="otel-sidecar-write", daemon=True)
        self._writer.start()

    @property
    def capture_content(self) -> bool:
        return self.config.capture_content

    @property
    def pid(self) -> int:
        """The current sidecar's process id."""
        return self._child.pid

    @property
    def pending(self) -> int:
        """Frames and runs' growth not shipped yet (the bench waits for 0)."""
        return len(self._outbox) + sum(p.through > p.shipped for p in list(self._runs.values()))

    def wait_ready(self, timeout: float) -> bool:
        """Wait until the current sidecar's exporter is set up (a bench starts measuring then); ``False`` on
        timeout or when it could not start. Never needed to export: what is shipped before waits in the pipe."""
        return self._child.ready.wait(timeout)

    def listener(self, run_dir: Path, info: RunInfo) -> SidecarListener:
        """The listener for the run in ``run_dir``: the sidecar folds its log written so far first."""
        log = run_dir.resolve() / "log.jsonl"
        try:
            prior = log.stat().st_size
        except OSError:
            prior = 0
        progress = _Progress(next(self._keys), str(log.parent), info, prior, prior)
        self.send(progress.opening(), always=True)
        self._runs[progress.key] = progress  # after its ``Open`` is in the outbox (``_write`` relies on it)
        listener = SidecarListener(self, progress)
        weakref.finalize(listener, progress.close)
        return listener

    def submit(self, spans: Sequence[SpanData]) -> None:
        """Ship finished spans; never blocks (a full outbox drops them: the sidecar never counts them)."""
        self.send(Spans(msgspec.json.encode(list(spans))))

    def send(self, frame: ToSidecar, *, always: bool = False) -> bool:
        """Append ``frame`` to the outbox; ``False`` when it is full or the export has stopped, unless
        ``always``."""
        if self._closed or self.gone or (not always and len(self._outbox) >= self._bound):
            return False
        self._outbox.append(frame)
        return True

    def _start(self) -> SidecarChild:
        child = SidecarChild(self._on_frame)
        self._outbox.appendleft(Config(self.config))
        return child

    def _on_frame(self, frame: FromSidecar) -> None:
        """The reader thread: the sidecar's log records, re-logged here, and its report."""
        if isinstance(frame, Log):
            logging.getLogger(frame.logger).log(frame.level, "%s", frame.message)
        elif isinstance(frame, Ready):
            self.sidecar_start_cpu_seconds = frame.cpu_seconds
        elif isinstance(frame, Report):
            self._report = frame.report
            self.sidecar_cpu_seconds = frame.cpu_seconds

    def _batch(self) -> tuple[list[ToSidecar], list[tuple[_Progress, int, int]]]:
        """What to ship now, in the run's thread's order, and each run's position it ships (a closed run's
        included, ``Close`` after its last ``Grow``). The positions are read *before* the outbox is drained,
        so a run's ``Open`` comes before its first ``Grow``, and a ``Chunk`` before a ``Grow`` past a line
        written after it."""
        grown: list[ToSidecar] = []
        positions: list[tuple[_Progress, int, int]] = []
        for progress in list(self._runs.values()):
            closed, through, lines = progress.closed, progress.through, progress.lines
            if through > progress.shipped or closed:
                positions.append((progress, through, lines))
            if through > progress.shipped:
                grown.append(Grow(progress.key, through))
            if closed:
                grown.append(Close(progress.key))
        batch: list[ToSidecar] = []
        while self._outbox:
            batch.append(self._outbox.popleft())
        return batch + grown, positions

    def _write(self) -> None:
        """The writer thread: every ``_FLUSH_SECONDS`` (and once at ``close``), what to ship → the pipe; a
        sidecar found dead is started again first (or the export stops)."""
        while True:
            stopping = self._stop.wait(_FLUSH_SECONDS)
            started = time.thread_time()
            if self._child.ended.is_set() and not self.gone:
                self._replace()
            batch, positions = self._batch()
            if batch and not self.gone:
                if self._child.write(batch):
                    self._shipped(positions)
                elif self._replace():  # it died just now: the new one opens the runs where they were,
                    # then gets what the old one did not (the runs' growth follows at the next flush)
                    self._outbox.extend(frame for frame in batch if not isinstance(frame, Grow | Close))
                else:
                    self._lost()
            self.busy_seconds += time.thread_time() - started
            if stopping:
                break
        self._child.close_input()

    def _shipped(self, positions: list[tuple[_Progress, int, int]]) -> None:
        for progress, through, lines in positions:
            progress.shipped, progress.shipped_lines = through, lines
            if progress.closed:
                self._runs.pop(progress.key, None)

    def _replace(self) -> bool:
        """The sidecar died: start another (within the limit), which opens every run at what was shipped;
        else stop the export. Whether one was started."""
        now = time.monotonic()
        while self._restarted_at and now - self._restarted_at[0] > _RESTART_WINDOW_SECONDS:
            self._restarted_at.popleft()
        if len(self._restarted_at) >= _RESTARTS:
            self._lost()
            return False
        self._child.end(0)
        self._restarted_at.append(now)
        try:
            self._child = self._start()
        except OSError as exc:  # no process could be started: the export stops, the writer thread lives on
            logger.warning("the trace export's process could not be started again (%s)", exc)
            self._lost()
            return False
        self.restarts += 1
        self._report = None
        for progress in reversed(list(self._runs.values())):
            self._outbox.insert(1, progress.opening())  # after its ``Config``, before anything of a run's
        logger.warning(
            "the trace export's process ended; started again (%d in the last %d s): the spans it held are lost",
            len(self._restarted_at),
            _RESTART_WINDOW_SECONDS,
        )
        return True

    def _lost(self) -> None:
        """The export stops: the lines not shipped are counted as not folded (what the sidecar held is
        lost)."""
        if self.gone:
            return
        self.gone = True
        self.unfolded += sum(p.lines - p.shipped_lines for p in list(self._runs.values()))
        logger.warning("the trace export's process ended; the export stops here (the runs go on)")

    def report(self) -> ExportReport:
        """What became of the spans so far, as the current sidecar counts them (once it reported)."""
        got = self._report or ExportReport(submitted=0, exported=0)
        return ExportReport(submitted=got.submitted, exported=got.exported, unfolded=got.unfolded + self.unfolded)

    def close(self) -> ExportReport:
        """Ship what is left, then wait for the sidecar to send what it holds (at most
        ``shutdownTimeoutSeconds``, plus its start when it has not started yet), report and end."""
        if not self._closed:
            self._closed = True
            self._stop.set()
            bound = self.config.shutdown_timeout_seconds + _START_GRACE_SECONDS
            deadline = time.monotonic() + bound
            self._writer.join(bound)
            if self._writer.is_alive():  # stuck writing to a sidecar that does not read
                self._child.process.kill()
                self._writer.join(5)
            if not self._child.end(max(0.0, deadline - time.monotonic())):
                logger.warning("the trace export's process did not end in time: the spans it held are lost")
            if self.restarts:
                logger.warning(
                    "the trace export's process was started again %d times: its counts cover the last one",
                    self.restarts,
                )
        return self.report()
