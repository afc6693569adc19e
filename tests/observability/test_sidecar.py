"""The export in its own process (``observability.sidecar``): a real engine run's spans reach a loopback
collector as the fold of its log gives them; a resumed run's sidecar folds the log written before it
started once; a cut trace ends at the cut; a full outbox refuses at once; a sidecar killed is started
again and the run goes on in it (past the limit the export stops); one sent Ctrl-C sends what it holds;
a real ``orchestrator serve`` exports through its sidecar, which ends with it."""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
import trio
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings, process_gone, serve_script
from tests.observability.collector import collector
from tests.observability.test_spans import INFO, big_run, live
from tests.proctable import children_of
from tests.service.server import serve_process, write_config
from tests.slowness import budget

from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run
from orchestrator.observability.config import ExportConfig
from orchestrator.observability.live import attach_trace, run_info, run_listener
from orchestrator.observability.report import ExportReport
from orchestrator.observability.runfold import CUT
from orchestrator.observability.sidecar import SidecarListener, SidecarSink
from orchestrator.observability.sidecarwire import Spans
from orchestrator.observability.spans import RunInfo, fold_spans, trace_id_for
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="coder", task="code")),
        turn("coder", call("run_shell", command="no-such-command-xyz")),
        turn("coder", finish("tried")),
        turn("lead", finish("done"), content="All done."),
    ]
}
ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}


def _feed(listener: SidecarListener, events: list[dict], run_dir: Path) -> None:
    """As ``RunLog.emit`` does: each line appended to the run's log, then handed to the listener."""
    with (run_dir / "log.jsonl").open("ab") as log:
        for event in events:
            typed = msgspec.convert(event, RunEvent)
            line = msgspec.json.encode(typed) + b"\n"
            log.write(line)
            log.flush()
            listener(typed, line)


def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait (bounded) for ``condition``, which another thread or process makes true."""
    deadline = time.monotonic() + budget(30)
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _run_dir(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    return run_dir


async def test_a_runs_spans_reach_the_collector_as_the_fold_of_its_log(tmp_path: Path, sim_for) -> None:
    with collector("record") as c:
        sink = SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10))
        async with sim_for(SCRIPT) as sim:
            settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
            prepared = prepare_run(settings, tmp_path, RunRequest(task="go"))
            services = RunServices(timeouts=FAST)
            attach_trace(services, run_listener(sink, prepared.run_dir, settings))
            with trio.fail_after(30):
                outcome = await execute_prepared(settings, tmp_path, prepared, services)
        report = await trio.to_thread.run_sync(sink.close)
    assert outcome.card.status == "success"
    expected = fold_spans(run_info(outcome.run_dir, settings.deployment), read_events(outcome.run_dir / "log.jsonl"))
    assert report == ExportReport(submitted=len(expected), exported=len(expected))
    assert sorted((s.name, int.from_bytes(s.span_id, "big")) for s in c.spans) == sorted(
        (s.name, s.span_id) for s in expected
    )
    # the first streamed chunk crossed too (the log does not record it): the call that streamed text
    streamed = [s for s in c.spans if any(a.key == "gen_ai.response.time_to_first_chunk" for a in s.attributes)]
    assert [s.name for s in streamed] == ["chat sim"]


def test_a_resumed_runs_sidecar_folds_only_the_log_written_before_it_started(tmp_path: Path) -> None:
    """The log grows after ``listener`` (the run goes on) before the sidecar reads it: what was written
    after is folded once, as shipped lines, not also as the log so far."""
    events = big_run(20)
    cut = len(events) // 2
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    log = run_dir / "log.jsonl"
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events[:cut]))
    with collector("record") as c:
        sink = SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10))
        listener = sink.listener(run_dir, INFO)
        _feed(listener, events[cut:], run_dir)  # written before the sidecar has even started
        report = sink.close()
    expected = {s.span_id: s for s in live(events[cut:], prior=events[:cut])}  # as an in-process listener
    sent = [int.from_bytes(s.span_id, "big") for s in c.spans]
    assert len(sent) == len(set(sent)) == report.exported == report.submitted  # nothing folded twice
    assert set(sent) == set(expected) and len(sent) < len(fold_spans(INFO, events))
    run = next(s for s in c.spans if s.name == "run")
    assert run.start_time_unix_nano == expected[int.from_bytes(run.span_id, "big")].start_ns


def test_a_cut_trace_ends_at_the_last_line_before_it_and_counts_the_rest(tmp_path: Path) -> None:
    """What a refused hand-over does (``handover.RunTrace``): the spans open at the cut are sent ended
    there, marked ``export_cut``, and every later line is counted, not folded."""
    events = big_run(40)
    half = len(events) // 2
    run_dir = _run_dir(tmp_path)
    with collector("record") as c:
        sink = SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10))
        listener = sink.listener(run_dir, INFO)
        _feed(listener, events[:half], run_dir)
        listener.cut_here()
        _feed(listener, events[half:], run_dir)
        report = sink.close()
    assert report.unfolded == len(events) - half
    expected = fold_spans(INFO, events[:half])  # the spans open at the cut are sent ended there
    assert sorted(int.from_bytes(s.span_id, "big") for s in c.spans) == sorted(s.span_id for s in expected)
    cut = [s for s in c.spans if any(a.key == "error.type" and a.value.string_value == CUT for a in s.attributes)]
    assert {s.name for s in cut} >= {"run", "invoke_agent lead"}


def test_a_full_outbox_refuses_without_waiting(monkeypatch) -> None:
    monkeypatch.setattr("orchestrator.observability.sidecar._FLUSH_SECONDS", 60.0)  # nothing shipped meanwhile
    sink = SidecarSink(ExportConfig(endpoint="http://127.0.0.1:9/v1/traces", shutdown_timeout_seconds=0.5), handoff=2)
    listener = sink.listener(Path("/nonexistent"), INFO)  # its ``Open`` is never refused: the outbox is full
    assert not sink.send(Spans(b"[]"))
    assert not listener.hand_chunk("lead-1", 0)  # which cuts the run's trace (``handover``)
    sink.close()


def test_a_killed_sidecar_is_started_again_and_the_runs_go_on_in_it(tmp_path: Path, caplog, monkeypatch) -> None:
    """The new sidecar opens the run at what was shipped to the old one (folded silently, as a resumed
    run's log) and goes on: together the two sent the run's whole trace, nothing twice."""
    caplog.set_level(logging.WARNING, logger="orchestrator.observability")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    events = big_run(40)
    half = len(events) // 2
    run_dir = _run_dir(tmp_path)
    with collector("record") as c:
        sink = SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10))
        listener = sink.listener(run_dir, INFO)
        _feed(listener, events[:half], run_dir)
        first = live(events[:half])
        _until(lambda: len(c.spans) >= len(first), "the first sidecar exported all it was shipped")
        killed = sink.pid
        os.kill(killed, signal.SIGKILL)
        _until(lambda: sink.restarts > 0, "the restart (its writer thread notices at its next flush)")
        # (lines shipped to a sidecar in the instant it dies are lost with what it held: none here)
        _feed(listener, events[half:], run_dir)
        report = sink.close()
        assert sink.restarts == 1 and sink.pid != killed and not sink.gone
    sent = [int.from_bytes(s.span_id, "big") for s in c.spans]
    assert len(sent) == len(set(sent))  # nothing twice
    assert set(sent) == {s.span_id for s in fold_spans(INFO, events)}
    assert report.exported == report.submitted == len(live(events[half:], prior=events[:half]))  # the new one's
    assert "the trace export's process ended; started again (1 in the last 600 s)" in caplog.text


def test_a_sidecar_that_keeps_dying_stops_the_export_not_the_caller(tmp_path: Path, caplog, monkeypatch) -> None:
    caplog.set_level(logging.WARNING, logger="orchestrator.observability")
    monkeypatch.setattr("orchestrator.observability.sidecar._RESTARTS", 0)
    run_dir = _run_dir(tmp_path)
    sink = SidecarSink(ExportConfig(endpoint="http://127.0.0.1:9/v1/traces", shutdown_timeout_seconds=0.5))
    listener = sink.listener(run_dir, INFO)
    os.kill(sink.pid, signal.SIGKILL)
    _until(lambda: sink.gone, "the export to stop (its writer thread notices at its next flush)")
    events = big_run(20)
    _feed(listener, events, run_dir)  # never blocks, never raises
    report = sink.close()
    assert report == ExportReport(submitted=0, exported=0, unfolded=len(events))
    assert "the trace export's process ended; the export stops here (the runs go on)" in caplog.text


def test_an_interrupt_leaves_the_sidecar_to_send_what_it_holds(tmp_path: Path, monkeypatch) -> None:
    """The sidecar has a session of its own (a Ctrl-C in a terminal does not reach it) and ignores SIGINT:
    it ends with its input, once it has sent what it holds."""
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
    events = big_run(20)
    half = len(events) // 2
    with collector("record") as c:
        sink = SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10))
        assert os.getpgid(sink.pid) != os.getpgid(0)
        run_dir = _run_dir(tmp_path)
        listener = sink.listener(run_dir, INFO)
        assert sink.wait_ready(30)  # its handler is set (before it, the default one would end it)
        _feed(listener, events[:half], run_dir)
        assert c.received.wait(30)  # spans are on their way
        os.kill(sink.pid, signal.SIGINT)
        _feed(listener, events[half:], run_dir)
        report = sink.close()
    assert report == ExportReport(submitted=len(fold_spans(INFO, events)), exported=report.submitted)
    assert len(c.spans) == report.exported


def _sidecars_of(pid: int) -> list[int]:
    """The sidecar processes ``pid`` started."""
    return [child for child in children_of(pid) if b"orchestrator.observability.sidecarproc" in _command(child)]


def _command(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


async def test_orchestrator_serve_exports_its_runs_through_a_sidecar_that_ends_with_it(tmp_path: Path) -> None:
    """The real service: a run's spans reach the collector as the fold of its log; the service's sidecar
    is its child, and is gone once the service exited."""
    with collector("record") as c:
        async with serve_script(SCRIPT) as sim:
            guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
            env = {"OTEL_EXPORTER_OTLP_ENDPOINT": c.url, "OTEL_BSP_SCHEDULE_DELAY": "50"}
            async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
                (sidecar,) = _sidecars_of(server.process.pid)
                run_id = (await server.post("/api/runs", {"task": "traced through the service"})).json()["runId"]
                await server.run_status(run_id, "success")

                async def run_span() -> bool:
                    return any(s.name == "run" for s in c.spans)

                await server.wait_for(run_span, what="the run span at the collector")
                assert await server.stop() == 0, server.stderr()
            assert "Traceback" not in server.stderr()
    with trio.fail_after(30):
        while not process_gone(sidecar):  # noqa: ASYNC110 (a process, no event): the service's end closed its input
            await trio.sleep(0.05)
    run_dir = server.workspace / ".orchestration" / "runs" / run_id
    expected = fold_spans(RunInfo(run_id=run_id, model="sim"), read_events(run_dir / "log.jsonl"))
    assert sorted((s.name, int.from_bytes(s.span_id, "big")) for s in c.spans) == sorted(
        (s.name, s.span_id) for s in expected
    )
    assert {int.from_bytes(s.trace_id, "big") for s in c.spans} == {trace_id_for(run_id)}


def test_a_sidecar_that_cannot_be_started_again_stops_the_export_and_close_still_ends(
    tmp_path: Path, caplog, monkeypatch
) -> None:
    caplog.set_level(logging.WARNING, logger="orchestrator.observability")
    sink = SidecarSink(ExportConfig(endpoint="http://127.0.0.1:9/v1/traces", shutdown_timeout_seconds=0.5))

    def refused(on_frame: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr("orchestrator.observability.sidecar.SidecarChild", refused)
    os.kill(sink.pid, signal.SIGKILL)
    _until(lambda: sink.gone, "the export to stop (its writer thread tries at its next flush)")
    assert sink.restarts == 0
    assert sink.close() == ExportReport(submitted=0, exported=0)
    assert "could not be started again ([Errno 24] Too many open files)" in caplog.text
