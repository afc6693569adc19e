"""The live trace export: a run-log listener (``RunServices.log_listeners``) folding each event as it is
written into spans and handing the finished ones to the process's sink.

The engine knows nothing of it. A resumed run's listener first folds the log written so far without
sending anything (the previous process sent those spans), so the spans still open at the restart end in
this process with the ids and start times they had. A listener never raises into the run log: a fault
in the fold is logged once and the export of that run stops.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
import trio

from orchestrator.config import Settings
from orchestrator.config.deployment import Deployment, ObservabilityConfig
from orchestrator.engine.run import DeltaSink, StreamDelta
from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunServices
from orchestrator.observability.config import export_config
from orchestrator.observability.spans import FOLDED, RunInfo, SpanData, TraceState, first_chunk, fold_span
from orchestrator.runlog import read_events
from orchestrator.runlog.events import LlmCall, RunEvent

if TYPE_CHECKING:
    from orchestrator.observability.sink import SpanSink

__all__ = [
    "SpanSubmitter",
    "TraceListener",
    "as_folded",
    "attach_trace",
    "close_sink",
    "open_sink",
    "run_info",
    "run_listener",
]

logger = logging.getLogger("orchestrator.observability")


class SpanSubmitter(Protocol):
    """What a listener needs of a sink (``observability.sink.SpanSink``, or a test's)."""

    @property
    def capture_content(self) -> bool: ...

    def submit(self, spans: Sequence[SpanData]) -> None: ...


def as_folded(event: RunEvent, *, capture_content: bool) -> dict[str, Any]:
    """A written event as the builtins the fold reads: the same spans as ``msgspec.to_builtins(event)``,
    cheaper on the run's thread. An event type the fold does not read (``spans.FOLDED``) keeps only its
    timestamp; a model call keeps its messages only when content is captured (the fold reads them only
    then: they are the bulk of a ``full`` log)."""
    kind: str = type(event).__struct_config__.tag  # type: ignore[assignment]
    if kind not in FOLDED:
        return {"timestamp": event.timestamp, "type": kind, "payload": {}}
    payload = event.payload
    if isinstance(event, LlmCall) and not capture_content:
        payload = msgspec.structs.replace(event.payload, sent=msgspec.UNSET, received=msgspec.UNSET)
    return {"timestamp": event.timestamp, "type": kind, "payload": msgspec.to_builtins(payload)}


class TraceListener:
    """One run's live export; call it with every written event."""

    def __init__(self, sink: SpanSubmitter, info: RunInfo, prior: Sequence[Mapping[str, Any]] = ()) -> None:
        self.sink = sink
        self.state = TraceState(info, capture_content=sink.capture_content)
        self.broken = False
        try:
            for event in prior:  # already sent by the process that wrote them
                fold_span(self.state, event)
        except Exception:
            self.broken = True
            logger.exception("trace export of run %s is off: could not fold its log so far", info.run_id)

    def __call__(self, event: RunEvent) -> None:
        if self.broken:
            return
        try:
            spans = fold_span(self.state, as_folded(event, capture_content=self.state.capture))
            if spans:
                self.sink.submit(spans)
        except Exception:  # the run must not notice: stop exporting this run, say so once
            self.broken = True
            logger.exception("trace export of run %s stopped: could not fold an event", self.state.info.run_id)

    def delta(self, delta: StreamDelta) -> None:
        """``RunServices.on_delta``: notes each model call's first streamed chunk (its time to first chunk)."""
        if not self.broken:
            try:
                first_chunk(self.state, delta.role_id, time.time_ns())
            except Exception:
                self.broken = True
                logger.exception("trace export of run %s stopped: could not note a chunk", self.state.info.run_id)

    def tee(self, other: DeltaSink | None) -> DeltaSink:
        """A delta sink feeding this listener and ``other`` (the host's own, when it has one)."""
        if other is None:
            return self.delta

        def both(delta: StreamDelta) -> None:
            other(delta)
            self.delta(delta)

        return both


def attach_trace(services: RunServices, listener: TraceListener) -> None:
    """Give a run's services the listener: its log events, and its model calls' streamed chunks."""
    services.log_listeners.append(listener)
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
    return TraceListener(sink, run_info(run_dir, settings.deployment), read_events(run_dir / "log.jsonl"))


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
