"""``orchestrator export-trace RUN_DIR``: send a run's ``log.jsonl`` as the spans the live export sends.

The same fold (``spans.fold_spans``) over the log, with the log's timestamps and the ids derived from
the run id: exporting a run that was exported live gives the same trace again, not a second one. Spans
a run left open (it stopped without finishing) are ended at its last event, marked unfinished.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Mapping
from pathlib import Path

from orchestrator.config.deployment import Deployment
from orchestrator.engine.runfolder import RUN_ID_PATTERN, TERMINAL_STATUSES, read_meta, runs_root
from orchestrator.errors import ConfigError
from orchestrator.observability.config import export_config
from orchestrator.observability.foldinput import read_fold_events
from orchestrator.observability.live import run_info
from orchestrator.observability.spans import fold_spans

__all__ = ["add_export_trace_arguments", "export_trace", "resolve_run_dir"]

HELP = "send a run's log to an OpenTelemetry collector as trace spans"


def add_export_trace_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.description = HELP
    parser.add_argument(
        "run_dir", metavar="RUN_DIR", help="the run's folder (<workspace>/.orchestration/runs/<id>), or its run id"
    )
    parser.add_argument(
        "--workspace", metavar="DIR", default=".", help="workspace whose deployment file counts (default .)"
    )
    return parser


def resolve_run_dir(given: str, workspace: Path) -> Path:
    """``RUN_DIR`` as given, or a bare run id under the workspace's runs folder."""
    path = Path(given)
    if not path.is_dir() and RUN_ID_PATTERN.match(given):
        return runs_root(workspace) / given
    return path


def export_trace(run_dir: Path, deployment: Deployment, env: Mapping[str, str]) -> int:
    """Fold and send; 0 when every span was delivered, 1 when some were dropped. Raises ``ConfigError``
    for a folder that is not a run or an export that is not configured."""
    log = run_dir / "log.jsonl"
    if not log.is_file():
        raise ConfigError(f"{run_dir}: not a run folder (no log.jsonl)")
    config = export_config(env, deployment.observability)
    if config is None:
        raise ConfigError(
            "no trace export configured: set OTEL_EXPORTER_OTLP_ENDPOINT (and unset OTEL_SDK_DISABLED), "
            "or add an `observability` block to the deployment file"
        )
    from orchestrator.observability.sink import SpanSink  # the otel extra, needed only here

    meta = read_meta(run_dir)
    if meta is None or meta.status not in TERMINAL_STATUSES:
        status = meta.status if meta is not None else "unreadable meta.json"
        print(
            f"orchestrator: {run_dir.name} is not finished ({status}); its open spans are sent unfinished",
            file=sys.stderr,
        )
    events = read_fold_events(log, capture_content=config.capture_content)
    spans = fold_spans(run_info(run_dir, deployment), events, capture_content=config.capture_content)
    # A command, not a run: hold every span and wait for one export request's worth of time at least.
    config = dataclasses.replace(
        config,
        max_queue_size=max(len(spans), config.max_queue_size or 0, 1),
        shutdown_timeout_seconds=max(config.shutdown_timeout_seconds, config.export_timeout_seconds + 1),
    )
    sink = SpanSink(config)
    sink.submit(spans)
    report = sink.close()
    print(f"orchestrator: sent {report.exported} of {report.submitted} spans of {run_dir.name} to {config.endpoint}")
    return 0 if report.dropped == 0 else 1
