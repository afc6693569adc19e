"""A run killed mid-way and resumed by a second "process" (the real engine against the sim): the two
live exports together are the one trace ``export-trace`` folds from the whole log, with the gap visible —
with the sink in the test's process, and with the export in its own process (``sidecar``: it reads the
log itself, here one the kill left with a torn last line)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings
from tests.observability.collector import collector
from tests.observability.test_live import in_memory_sink

from orchestrator.engine.reconcile import reconcile_runs
from orchestrator.engine.runfolder import runs_root
from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run, resume_run
from orchestrator.observability.config import ExportConfig
from orchestrator.observability.live import attach_trace, run_info, run_listener
from orchestrator.observability.sidecar import SidecarSink
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


@dataclass(frozen=True)
class Sent:
    """A span as a backend got it, whichever way it went."""

    span_id: int
    trace_id: int
    name: str
    start: int
    end: int
    parent: int | None
    attributes: dict[str, Any]


@contextmanager
def exporting(kind: str) -> Iterator[tuple[Callable[[], Any], Callable[[], list[Sent]]]]:
    """A way to open a sink, and the spans its sinks sent (``in-process``: the SDK's in-memory exporter;
    ``sidecar``: a loopback collector)."""
    if kind == "in-process":
        opened: list[Any] = []

        def open_in_process() -> Any:
            sink, memory = in_memory_sink()
            opened.append(memory)
            return sink

        def in_memory() -> list[Sent]:
            return [
                Sent(
                    s.context.span_id,
                    s.context.trace_id,
                    s.name,
                    s.start_time,
                    s.end_time,
                    s.parent.span_id if s.parent else None,
                    dict(s.attributes),
                )
                for memory in opened
                for s in memory.get_finished_spans()
            ]

        yield open_in_process, in_memory
        return
    with collector("record") as c:

        def received() -> list[Sent]:
            return [
                Sent(
                    int.from_bytes(s.span_id, "big"),
                    int.from_bytes(s.trace_id, "big"),
                    s.name,
                    s.start_time_unix_nano,
                    s.end_time_unix_nano,
                    int.from_bytes(s.parent_span_id, "big") if s.parent_span_id else None,
                    {a.key: a.value.string_value or a.value.int_value for a in s.attributes},
                )
                for s in c.spans
            ]

        yield lambda: SidecarSink(ExportConfig(endpoint=f"{c.url}/v1/traces", shutdown_timeout_seconds=10)), received


class _Kill(Exception):
    """Raised from a log listener: nothing after the event that triggered it is written, as in a kill."""


@pytest.mark.parametrize("kind", ["in-process", "sidecar"])
async def test_the_live_exports_of_both_processes_are_the_one_trace_of_the_whole_log(
    tmp_path: Path, sim_for, kind: str
) -> None:
    with exporting(kind) as (open_sink, sent):
        async with sim_for(SCRIPT) as sim:
            settings = make_settings(tmp_path, sim.base_url, roles=ROLES)

            def kill_at_the_second_command(event: RunEvent) -> None:
                if type(event).__name__ == "ToolCallEvent" and "step-1" in event.payload.arguments:
                    raise _Kill

            services = RunServices(timeouts=FAST)  # the first process, as `orchestrator run` wires it
            prepared = prepare_run(settings, tmp_path, RunRequest(task="build it"))
            first_sink = open_sink()
            attach_trace(services, run_listener(first_sink, prepared.run_dir, settings))
            services.log_listeners.append(kill_at_the_second_command)
            with pytest.raises(_Kill):
                await execute_prepared(settings, tmp_path, prepared, services)
            del services  # its listener goes with it, as with the process
            first_sink.close()
            first = {s.span_id: s for s in sent()}
            with (prepared.run_dir / "log.jsonl").open("ab") as log:
                log.write(b'{"type":"tool_res')  # killed half-way through a line: the resume seals it

            found = reconcile_runs(tmp_path).resumable
            assert found is not None and found.run_dir == prepared.run_dir
            again = RunServices(timeouts=FAST)
            second_sink = open_sink()
            attach_trace(again, run_listener(second_sink, found.run_dir, settings))
            outcome = await resume_run(settings, tmp_path, found.run_dir, found.state, found.seq, again)
            second_sink.close()
        second = {s.span_id: s for s in sent() if s.span_id not in first}
        assert len(sent()) == len(first) + len(second)  # nothing sent twice
    assert outcome.card.summary == "shipped"
    (run_dir,) = runs_root(tmp_path).iterdir()
    whole = {
        s.span_id: s for s in fold_spans(run_info(run_dir, settings.deployment), read_events(run_dir / "log.jsonl"))
    }
    assert set(first) | set(second) == set(whole)  # nothing missing
    assert {s.trace_id for s in [*first.values(), *second.values()]} == {trace_id_for(run_dir.name)}
    assert {s.name for s in first.values()} <= {"chat sim", "execute_tool run_shell"}  # roles were still open
    for span_id, span in second.items():  # same start, end and parent as the fold of the whole log
        want = whole[span_id]
        assert (span.start, span.end) == (want.start_ns, want.end_ns), span.name
        assert span.parent == want.parent_id, span.name
    (gap,) = [s for s in second.values() if s.name == "resume"]
    cut = next(s for s in second.values() if s.name == "execute_tool run_shell" and s.end == gap.start)
    assert cut.attributes["error.type"] == "interrupted"
    coder = next(s for s in second.values() if s.name == "invoke_agent coder")
    assert coder.start < gap.start < gap.end < coder.end
