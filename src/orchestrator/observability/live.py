"""The live trace export's face to the commands: whether it is on (``open_sink``: a sidecar, when the
variables or the deployment say so), each run's listener (``run_listener``) and how a run's services get
it (``attach_trace``), and the end (``close_sink``). The listener on the run's thread only hands each
written line over (``handover.RunTrace``); the fold runs in the sidecar (``sidecar``), or on an in-process
sink's thread (``runfold.TraceListener``). The engine knows nothing of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import trio

from orchestrator.config import Settings
from orchestrator.config.deployment import Deployment, ObservabilityConfig
from orchestrator.engine.runfolder import read_meta
from orchestrator.engine.runner import RunServices
from orchestrator.observability.config import export_config
from orchestrator.observability.foldinput import read_fold_events
from orchestrator.observability.handover import RunTrace
from orchestrator.observability.runfold import SpanSubmitter, TraceListener
from orchestrator.observability.sidecar import SidecarSink
from orchestrator.observability.spans import RunInfo

__all__ = [
    "TraceSink",
    "attach_trace",
    "close_sink",
    "open_sink",
    "run_info",
    "run_listener",
]

logger = logging.getLogger("orchestrator.observability")


#: Where runs' traces go: this process's export runs in a sidecar (``open_sink``); an in-process sink
#: (``sink.SpanSink``, or a test's) folds on a thread of its own.
TraceSink = SpanSubmitter | SidecarSink


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
