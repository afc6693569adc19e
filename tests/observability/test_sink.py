"""The SDK edge against a real OTLP/HTTP exchange on loopback: spans delivered to a working collector, and
a collector that is down, slow (holding each request 5 s) or answering 500 costing spans, never the run —
each run both with the sink in the test's process and with the export in its own process (``sidecar``,
what ``orchestrator serve``, ``run`` and ``mcp`` use)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import trio
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings
from tests.observability.collector import Collector, closed_port, collector

from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_prepared, prepare_run
from orchestrator.observability.config import ExportConfig
from orchestrator.observability.live import run_listener
from orchestrator.observability.sidecar import SidecarSink
from orchestrator.observability.sink import _PROBE_SPANS, ExportReport, SpanSink
from orchestrator.observability.spans import RunInfo, SpanData, fold_spans
from orchestrator.runlog import read_events

ROLES = {"lead": ["run_shell", "ask_human", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", call("run_shell", command="echo hi")),
        turn("lead", call("ask_human", question="Go on?")),
        turn("lead", finish("done")),
    ]
}


class AnswerOnceExported:
    """Answers the question once the collector has a request (so spans were on the wire mid-run)."""

    def __init__(self, target: Collector | None) -> None:
        self.target = target

    async def ask(self, question_id: str, question: str, context: str | None) -> str:
        if self.target is not None:
            received = await trio.to_thread.run_sync(self.target.received.wait, 10)
            assert received, "the collector never got a request"
        return "yes"


@pytest.fixture(params=["in-process", "sidecar"])
def open_sink(request, monkeypatch) -> Callable[[ExportConfig], SpanSink | SidecarSink]:
    """A sink exporting every 10 ms: in this process, or in a sidecar (told by the SDK's own variable)."""
    if request.param == "in-process":
        return lambda config: SpanSink(config, schedule_delay_millis=10)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    return SidecarSink


async def run_exporting(
    tmp_path: Path, sim_for, config: ExportConfig, target: Collector | None, open_sink
) -> tuple[RunOutcome, SpanSink | SidecarSink]:
    sink = open_sink(config)
    async with sim_for(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        prepared = prepare_run(settings, tmp_path, RunRequest(task="go"))
        services = RunServices(
            timeouts=FAST,
            human=AnswerOnceExported(target),
            log_line_listeners=[run_listener(sink, prepared.run_dir, settings)],
        )
        with trio.fail_after(20):
            outcome = await execute_prepared(settings, tmp_path, prepared, services)
    return outcome, sink


def _expected_spans(outcome: RunOutcome) -> int:
    return len(fold_spans(RunInfo(run_id=outcome.run_id), read_events(outcome.run_dir / "log.jsonl")))


async def test_a_working_collector_receives_every_span_with_the_headers(tmp_path: Path, sim_for, open_sink) -> None:
    with collector("record") as c:
        config = ExportConfig(endpoint=f"{c.url}/v1/traces", headers={"x-team": "blue"}, shutdown_timeout_seconds=10)
        outcome, sink = await run_exporting(tmp_path, sim_for, config, c, open_sink)
        report = await trio.to_thread.run_sync(sink.close)
    assert outcome.card.status == "success"
    assert report == ExportReport(submitted=_expected_spans(outcome), exported=report.submitted)
    names = ["chat sim"] * 3 + ["execute_tool finish", "execute_tool run_shell", "invoke_agent lead", "run"]
    assert sorted(s.name for s in c.spans) == names
    assert all(h.get("x-team") == "blue" for h in c.headers)


async def test_a_slow_collector_never_holds_the_run_and_the_unsent_spans_are_counted(
    tmp_path: Path, sim_for, open_sink
) -> None:
    with collector("slow", hold_seconds=5.0) as c:
        config = ExportConfig(endpoint=f"{c.url}/v1/traces", export_timeout_seconds=10, shutdown_timeout_seconds=0.2)
        outcome, sink = await run_exporting(tmp_path, sim_for, config, c, open_sink)
        assert c.in_flight >= 1  # the run finished while the collector still held the first export
        report = await trio.to_thread.run_sync(sink.close)
    assert outcome.card.status == "success"
    assert report.submitted == _expected_spans(outcome)
    assert report.exported == 0 and report.dropped == report.submitted


async def test_a_collector_answering_500_drops_spans_logged_once(tmp_path: Path, sim_for, caplog, open_sink) -> None:
    caplog.set_level(logging.WARNING, logger="orchestrator.observability")
    with collector("fail") as c:
        config = ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=5)
        outcome, sink = await run_exporting(tmp_path, sim_for, config, c, open_sink)
        report = await trio.to_thread.run_sync(sink.close)
    assert outcome.card.status == "success"
    assert report.exported == 0 and report.dropped == report.submitted == _expected_spans(outcome)
    failures = [r.getMessage() for r in caplog.records if "failed; spans are dropped" in r.getMessage()]
    assert failures == [
        f"trace export to {c.url}/v1/traces failed; spans are dropped until it answers (the run goes on)"
    ]
    assert f"trace export: {report.dropped} of {report.submitted} spans dropped" in caplog.text


async def test_a_collector_that_is_down_costs_the_spans_not_the_run(tmp_path: Path, sim_for, open_sink) -> None:
    config = ExportConfig(
        endpoint=f"http://127.0.0.1:{closed_port()}/v1/traces", export_timeout_seconds=1, shutdown_timeout_seconds=0.2
    )
    outcome, sink = await run_exporting(tmp_path, sim_for, config, None, open_sink)
    report = await trio.to_thread.run_sync(sink.close)
    assert outcome.card.status == "success"
    assert report.submitted == _expected_spans(outcome) and report.exported == 0


def test_a_full_queue_drops_the_oldest_spans_instead_of_waiting() -> None:
    with collector("slow", hold_seconds=5.0) as c:
        config = ExportConfig(endpoint=f"{c.url}/v1/traces", max_queue_size=4, shutdown_timeout_seconds=0.2)
        sink = SpanSink(config, schedule_delay_millis=10)
        spans = fold_spans(RunInfo(run_id="run-20260101-090000", started_at="2026-01-01T09:00:00Z"), [])
        for _ in range(50):
            sink.submit(spans)  # returns at once however full the queue is
        report = sink.close()
    assert report.submitted == 50 and report.dropped >= 46


def test_after_a_failed_export_batches_are_dropped_unsent_for_a_while(monkeypatch) -> None:
    """The back-off: a refusing collector gets one request, not one per batch; what follows within the
    back-off is dropped without being encoded or sent, and counted."""
    monkeypatch.setattr("orchestrator.observability.sink._BACKOFF_FIRST", 600.0)
    spans = fold_spans(RunInfo(run_id="run-20260101-090000", started_at="2026-01-01T09:00:00Z"), [])
    with collector("fail") as c:
        config = ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=5)
        sink = SpanSink(config, schedule_delay_millis=10)
        sink.submit(spans)
        assert c.received.wait(10)
        for _ in range(20):
            sink.submit(spans)
        report = sink.close()
        assert c.requests == 1
    assert report == ExportReport(submitted=21, exported=0)


def _one_span_each(count: int) -> list[list[SpanData]]:
    return [
        fold_spans(RunInfo(run_id=f"run-20260101-0900{n:02d}", started_at="2026-01-01T09:00:00Z"), [])
        for n in range(count)
    ]


def test_a_collector_is_probed_with_a_few_spans_before_it_is_sent_a_whole_batch() -> None:
    """The first export sends the batch's first ``_PROBE_SPANS``; once they are taken, the rest follows."""
    with collector("record") as c:
        sink = SpanSink(
            ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=5), schedule_delay_millis=60_000
        )
        for spans in _one_span_each(20):
            sink.submit(spans)
        report = sink.close()  # one batch of 20, flushed at close
        assert c.batch_sizes == [_PROBE_SPANS, 20 - _PROBE_SPANS]
    assert report == ExportReport(submitted=20, exported=20)


def test_a_refusing_collector_costs_a_probe_not_the_encoding_of_a_whole_batch(monkeypatch) -> None:
    """A batch for a collector not known to answer is encoded whole only once the probe went through:
    when it did not, the rest is dropped unsent (counted), and so is what follows within the back-off."""
    monkeypatch.setattr("orchestrator.observability.sink._BACKOFF_FIRST", 600.0)
    with collector("fail") as c:
        sink = SpanSink(
            ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=5), schedule_delay_millis=60_000
        )
        for spans in _one_span_each(20):
            sink.submit(spans)
        report = sink.close()
        assert c.batch_sizes == [_PROBE_SPANS]
    assert report == ExportReport(submitted=20, exported=0)
