"""The fold's listener in the process that exports (``observability.runfold``): a fold that fails stops
that run's export quietly; a full hand-off cuts the run's trace there, every parent sent."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import msgspec
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.observability.test_live import _deployment
from tests.observability.test_spans import INFO, Collect, big_run

from orchestrator.observability.config import ExportConfig
from orchestrator.observability.live import run_info
from orchestrator.observability.runfold import CUT, TraceListener
from orchestrator.observability.sink import SpanSink
from orchestrator.observability.spans import SpanData, fold_spans
from orchestrator.runlog.events import RunEvent


def test_a_listener_whose_fold_fails_stops_quietly(tmp_path: Path, caplog, monkeypatch) -> None:
    def exploding(state: Any, event: Any) -> list[Any]:
        raise RuntimeError("boom")

    monkeypatch.setattr("orchestrator.observability.runfold.fold_span", exploding)
    sink = Collect()
    listener = TraceListener(sink, run_info(tmp_path, _deployment(tmp_path)))
    line = (
        b'{"timestamp":"2026-01-01T09:00:00.000Z","type":"role_start","payload":{"role":"lead","roleId":"lead-0-1",'
        b'"depth":0,"task":"t"}}'
    )
    start = msgspec.json.decode(line, type=RunEvent)
    listener(start, line)  # the fold raises: swallowed, logged once
    listener(start, line)
    assert listener.broken and sink.spans == [] and sink.unfolded == 0
    assert [r.message for r in caplog.records].count(
        f"trace export of run {tmp_path.name} stopped: could not fold an event"
    ) == 1


def test_a_full_hand_off_cuts_the_trace_and_counts_the_events_not_folded(caplog) -> None:
    """The sink's thread held busy: the hand-off (4 entries) fills, the run's trace is cut there — the spans
    open at the cut are sent ended, marked ``export_cut``, every parent sent — and the rest is counted."""
    exporter = InMemorySpanExporter()
    sink = SpanSink(ExportConfig(endpoint="memory://", shutdown_timeout_seconds=10), exporter, handoff=4)
    entered, release = threading.Event(), threading.Event()

    def hold(_: None) -> list[SpanData]:
        entered.set()
        release.wait(10)
        return []

    assert sink.defer(hold, None)
    assert entered.wait(10)  # the sink's thread folds nothing more until released
    listener = TraceListener(sink, INFO)
    events = big_run(20)
    for event in events:
        typed = msgspec.convert(event, RunEvent)
        listener(typed, msgspec.json.encode(typed))
    assert listener.cut
    release.set()
    report = sink.close()
    assert report.unfolded == len(events) - 4 and report.dropped == 0
    spans = exporter.get_finished_spans()
    expected = fold_spans(INFO, events[:4])  # the first four folded, the open ones ended at the fourth
    assert sorted(s.context.span_id for s in spans) == sorted(s.span_id for s in expected)
    sent = {s.context.span_id for s in spans}
    assert all(s.parent is None or s.parent.span_id in sent for s in spans)
    cut = [s for s in spans if s.attributes.get("error.type") == CUT]
    assert {s.name for s in cut} >= {"run", "invoke_agent lead"}
    assert f"trace export: {report.unfolded} run-log events not folded" in caplog.text
