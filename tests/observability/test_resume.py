"""A run killed mid-way and resumed by a second "process" (the real engine against the sim): the two
live exports together are the one trace ``export-trace`` folds from the whole log, with the gap visible."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings
from tests.observability.test_live import in_memory_sink

from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import runs_root
from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run, resume_run
from orchestrator.observability.live import attach_trace, run_info, run_listener
from orchestrator.observability.spans import fold_spans, trace_id_for
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", finish("shipped"), last="coded", reusable=True),
        turn("lead", call("agent", role="coder", task="code it"), reusable=True),
        turn("coder", finish("coded"), last="step-1", reusable=True),
        turn("coder", call("run_shell", command="echo step-1"), last="step-0", reusable=True),
        turn("coder", call("run_shell", command="echo step-0"), reusable=True),
    ]
}


class _Kill(Exception):
    """Raised from a log listener: nothing after the event that triggered it is written, as in a kill."""


async def test_the_live_exports_of_both_processes_are_the_one_trace_of_the_whole_log(tmp_path: Path, sim_for) -> None:
    first_sink, first_spans = in_memory_sink()
    second_sink, second_spans = in_memory_sink()
    async with sim_for(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)

        def kill_at_the_second_command(event: RunEvent) -> None:
            if type(event).__name__ == "ToolCallEvent" and "step-1" in event.payload.arguments:
                raise _Kill

        services = RunServices(timeouts=FAST)  # the first process, as `orchestrator run` wires it
        prepared = prepare_run(settings, tmp_path, RunRequest(task="build it"))
        attach_trace(services, run_listener(first_sink, prepared.run_dir, settings))
        services.log_listeners.append(kill_at_the_second_command)
        with pytest.raises(_Kill):
            await execute_prepared(settings, tmp_path, prepared, services)
        first_sink.close()

        found = reconcile_runs(tmp_path).resumable
        assert found is not None and found.run_dir == prepared.run_dir
        again = RunServices(timeouts=FAST)
        attach_trace(again, run_listener(second_sink, found.run_dir, settings))
        outcome = await resume_run(settings, tmp_path, found.run_dir, found.state, found.seq, again)
        second_sink.close()
    assert outcome.card.summary == "shipped"
    (run_dir,) = runs_root(tmp_path).iterdir()
    whole = {
        s.span_id: s for s in fold_spans(run_info(run_dir, settings.deployment), read_events(run_dir / "log.jsonl"))
    }
    first = {s.context.span_id: s for s in first_spans.get_finished_spans()}
    second = {s.context.span_id: s for s in second_spans.get_finished_spans()}
    assert not set(first) & set(second)  # nothing sent twice
    assert set(first) | set(second) == set(whole)  # nothing missing
    assert {s.context.trace_id for s in [*first.values(), *second.values()]} == {trace_id_for(run_dir.name)}
    assert {s.name for s in first.values()} <= {"chat sim", "execute_tool run_shell"}  # roles were still open
    for span_id, span in second.items():  # same start, end and parent as the fold of the whole log
        want = whole[span_id]
        assert (span.start_time, span.end_time) == (want.start_ns, want.end_ns), span.name
        assert (span.parent.span_id if span.parent else None) == want.parent_id, span.name
    (gap,) = [s for s in second.values() if s.name == "resume"]
    cut = next(s for s in second.values() if s.name == "execute_tool run_shell" and s.end_time == gap.start_time)
    assert cut.attributes["error.type"] == "interrupted"
    coder = next(s for s in second.values() if s.name == "invoke_agent coder")
    assert coder.start_time < gap.start_time < gap.end_time < coder.end_time
