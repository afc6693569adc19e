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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import trio

from orchestrator.config import Settings
from orchestrator.config.deployment import Deployment, ObservabilityConfig
from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunServices
from orchestrator.observability.config import export_config
from orchestrator.observability.foldinput import event_decoder, read_fold_events
from orchestrator.observability.handover import RunTrace
from orchestrator.observability.sidecar import SidecarSink
from orchestrator.observability.spans import RunInfo, SpanData, TraceState, close_open, first_chunk, fold_span

__all__ = [
    "CUT",
    "SpanSubmitter",
    "TraceListener",
    "TraceSink",
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


#: Where runs' traces go: this process's export runs in a sidecar (``open_sink``); an in-process sink
#: (``sink.SpanSink``, or a test's) folds on a thread of its own.
TraceSink = SpanSubmitter | SidecarSink


class TraceListener(RunTrace):
    """One run's live export in this process: each written line is handed to the sink's thread, which
    folds it (``fold_line``) into the run's ``TraceState``."""

    def __init__(self, sink: SpanSubmitter, info: RunInfo, prior: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(sink)
        self.sink = sink
        #: touched by the sink's thread only, once the first line is handed off
        self.state = TraceState(info, capture_content=sink.capture_content)
        #: what the fold reads of a line (``foldinput``), as ``export-trace`` decodes the file
        self.decode = event_decoder(capture_content=sink.capture_content)
        try:
            for event in prior:  # already sent by the process that wrote them
                fold_span(self.state, event)
        except Exception:
            self.broken = True
            logger.exception("trace export of run %s is off: could not fold its log so far", info.run_id)

    def hand_line(self, line: bytes) -> bool:
        return self.sink.defer(self.fold_line, line)

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        return self.sink.defer(self.fold_chunk, (role_id, at_ns))

    def hand_cut(self) -> None:
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


def attach_trace(services: RunServices, listener: RunTrace) -> None:
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


def run_listener(sink: TraceSink, run_dir: Path, settings: Settings) -> RunTrace:
    """The listener for the run in ``run_dir``; its existing log (a resumed run) is folded first."""
    info = run_info(run_dir, settings.deployment)
    if isinstance(sink, SidecarSink):
        return sink.listener(run_dir, info)
    return TraceListener(sink, info, read_fold_events(run_dir / "log.jsonl", capture_content=sink.capture_content))


def open_sink(env: Mapping[str, str], block: ObservabilityConfig | None) -> SidecarSink | None:
    """This process's trace export (``sidecar.SidecarSink``) when it is configured (the variables, then the
    deployment's ``observability`` block), else ``None`` (also when the ``otel`` extra is not installed:
    one warning, and the process goes on without it). A configuration the SDK refuses (an ``OTEL_BSP_*``
    value …) is said by the sidecar, which then exports nothing; the process goes on untraced."""
    config = export_config(env, block)
    if config is None:
        return None
    try:
        import opentelemetry.sdk.trace  # noqa: F401 (the sidecar needs the extra: say so here, once)
    except ImportError:
        logger.warning("trace export is configured but OpenTelemetry is missing: pip install 'orchestrator[otel]'")
        return None
    try:
        return SidecarSink(config)
    except OSError as exc:  # the sidecar's process could not be started
        logger.warning("trace export is off: it could not start (%s: %s)", type(exc).__name__, exc)
        return None


async def close_sink(sink: SidecarSink | None) -> None:
    """Close a sink from trio code: its bounded wait for the queued spans runs in a worker thread."""
    if sink is not None:
        await trio.to_thread.run_sync(sink.close)
