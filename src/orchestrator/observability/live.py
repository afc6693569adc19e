"""The live trace export: a run-log line listener (``RunServices.log_line_listeners``) handing each
written line to the sink's thread, where it is folded into spans exactly as ``export-trace`` folds the file.

The run's thread only appends the line (immutable ``bytes``) to the sink's bounded hand-off
(``SpanSubmitter.defer``): decoding, the fold and the SDK's conversion all happen on the sink's thread, which
alone touches the run's ``TraceState`` from then on. When the hand-off is full, the run's trace is cut: the
refused line and every later one are counted (``unfolded``) and never folded, and the spans still open are
sent ended at the last folded event with ``error.type`` ``export_cut`` — a trace missing its end, never one
folded across a gap. The engine knows nothing of it. A resumed run's listener first folds the log written so
far without sending anything (the previous process sent those spans), so the spans still open at the restart
end in this process with the ids and start times they had. A listener never raises into the run log: a
fault in the fold is logged once and the export of that run stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import trio

from orchestrator.config import Settings
from orchestrator.config.deployment import Deployment, ObservabilityConfig
from orchestrator.engine.run import DeltaSink, StreamDelta
from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunServices
from orchestrator.observability.config import export_config
from orchestrator.observability.foldinput import event_decoder, read_fold_events
from orchestrator.observability.spans import RunInfo, SpanData, TraceState, close_open, first_chunk, fold_span
from orchestrator.runlog.events import LlmCallStart, RunEvent

if TYPE_CHECKING:
    from orchestrator.observability.sink import SpanSink

__all__ = [
    "CUT",
    "SpanSubmitter",
    "TraceListener",
    "attach_trace",
    "close_sink",
    "open_sink",
    "run_info",
    "run_listener",
]

logger = logging.getLogger("orchestrator.observability")
T = TypeVar("T")
#: ``error.type`` of the spans still open when a run's trace is cut (the hand-off was full)
CUT = "export_cut"


class SpanSubmitter(Protocol):
    """What a listener needs of a sink (``observability.sink.SpanSink``, or a test's)."""

    #: run-log events never folded: refused by a full hand-off, or after their run's trace was cut
    unfolded: int

    @property
    def capture_content(self) -> bool: ...

    def submit(self, spans: Sequence[SpanData]) -> None: ...

    def defer(self, fold: Callable[[T], Sequence[SpanData]], item: T, *, always: bool = False) -> bool:
        """Run ``fold(item)`` on the sink's thread and send the spans it returns; ``False`` (counted in
        ``unfolded``) when the hand-off is full, unless ``always``. Never blocks."""
        ...


class TraceListener:
    """One run's live export: call it with every written event and its line (``log_line_listeners``)."""

    def __init__(self, sink: SpanSubmitter, info: RunInfo, prior: Sequence[Mapping[str, Any]] = ()) -> None:
        self.sink = sink
        #: touched by the sink's thread only, once the first line is handed off
        self.state = TraceState(info, capture_content=sink.capture_content)
        #: what the fold reads of a line (``foldinput``), as ``export-trace`` decodes the file
        self.decode = event_decoder(capture_content=sink.capture_content)
        #: set by the fold (the sink's thread) on a fault: this run's export stops
        self.broken = False
        #: set on the run's thread when the hand-off was full: this run's trace ends there
        self.cut = False
        #: role instances whose model call in flight has not streamed its first chunk yet (the run's thread)
        self._awaiting: set[str] = set()
        try:
            for event in prior:  # already sent by the process that wrote them
                fold_span(self.state, event)
        except Exception:
            self.broken = True
            logger.exception("trace export of run %s is off: could not fold its log so far", info.run_id)

    def __call__(self, event: RunEvent, line: bytes) -> None:
        """The run's thread: hand the line over (an append), note a model call's start for ``delta``."""
        if self.broken:
            return
        if self.cut:
            self.sink.unfolded += 1
            return
        if type(event) is LlmCallStart:
            self._awaiting.add(event.payload.role_id)
        if not self.sink.defer(self.fold_line, line):
            self._cut()

    def delta(self, delta: StreamDelta) -> None:
        """``RunServices.on_delta``: hands over each model call's first streamed chunk (its time to first
        chunk); every later chunk costs a set lookup."""
        if delta.role_id in self._awaiting and not self.broken and not self.cut:
            self._awaiting.discard(delta.role_id)
            if not self.sink.defer(self.fold_chunk, (delta.role_id, time.time_ns())):
                self._cut()

    def _cut(self) -> None:
        self.cut = True
        self.sink.defer(self.fold_cut, None, always=True)

    # --- the sink's thread ---------------------------------------------------------------------------

    def fold_line(self, line: bytes) -> list[SpanData]:
        """One log line, decoded as ``export-trace`` decodes the file (``foldinput``), folded (``spans.fold_span``)."""
        event = self.decode(line)
        return [] if event is None else self._guard(lambda: fold_span(self.state, event))

    def fold_chunk(self, chunk: tuple[str, int]) -> list[SpanData]:
        role_id, at = chunk
        return self._guard(lambda: first_chunk(self.state, role_id, at))

    def fold_cut(self, _: None) -> list[SpanData]:
        """The spans still open when the trace was cut, ended at the last folded event."""
        return self._guard(lambda: close_open(self.state, "the trace export's hand-off was full", error_type=CUT))

    def _guard(self, fold: Callable[[], list[SpanData] | None]) -> list[SpanData]:
        if self.broken:
            return []
        try:
            return fold() or []
        except Exception:  # the run must not notice: stop exporting this run, say so once
            self.broken = True
            logger.exception("trace export of run %s stopped: could not fold an event", self.state.info.run_id)
            return []

    def tee(self, other: DeltaSink | None) -> DeltaSink:
        """A delta sink feeding this listener and ``other`` (the host's own, when it has one)."""
        if other is None:
            return self.delta

        def both(delta: StreamDelta) -> None:
            other(delta)
            self.delta(delta)

        return both


def attach_trace(services: RunServices, listener: TraceListener) -> None:
    """Give a run's services the listener: its log lines, and its model calls' streamed chunks."""
    services.log_line_listeners.append(listener)
    services.on_delta = listener.tee(services.on_delta)


def run_info(run_dir: Path, deployment: Deployment) -> RunInfo:
    """The run's identity from its ``meta.json`` (the folder name when unreadable) and the model's name
    and sampling parameters from the deployment."""
    meta = read_meta(run_dir)
    model = deployment.model
    return RunInfo(
        run_id=meta.run_id if meta is not None else run_dir.name,
        started_at=meta.start_time if meta is not None else None,
        continues_from=meta.continues_from if meta is not None else None,
        model=model.name,
        temperature=model.generation.temperature,
        max_tokens=model.generation.max_tokens,
    )


def run_listener(sink: SpanSubmitter, run_dir: Path, settings: Settings) -> TraceListener:
    """The listener for the run in ``run_dir``; its existing log (a resumed run) is folded first."""
    prior = read_fold_events(run_dir / "log.jsonl", capture_content=sink.capture_content)
    return TraceListener(sink, run_info(run_dir, settings.deployment), prior)


def open_sink(env: Mapping[str, str], block: ObservabilityConfig | None) -> SpanSink | None:
    """This process's ``SpanSink`` when the export is configured (the variables, then the deployment's
    ``observability`` block), else ``None`` (also when the ``otel`` extra is not installed: one warning,
    and the process goes on without it)."""
    config = export_config(env, block)
    if config is None:
        return None
    try:
        from orchestrator.observability.sink import SpanSink
    except ImportError:
        logger.warning("trace export is configured but OpenTelemetry is missing: pip install 'orchestrator[otel]'")
        return None
    try:
        return SpanSink(config)
    except Exception as exc:  # e.g. an OTEL_BSP_* value the SDK refuses: the process goes on untraced
        logger.warning("trace export is off: it could not start (%s: %s)", type(exc).__name__, exc)
        return None


async def close_sink(sink: SpanSink | None) -> None:
    """Close a sink from trio code: its bounded wait for the queued spans runs in a worker thread."""
    if sink is not None:
        await trio.to_thread.run_sync(sink.close)
