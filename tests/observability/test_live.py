"""The live export of a real run (the engine against the sim) through the SDK's in-memory exporter: the
span tree, its attributes and timings against ``log.jsonl``, and ``export-trace``'s fold of the same log
giving the same spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import trio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from tests.engine.harness import FAST, call, finish, of_type, turn
from tests.engine.interlude_runs import ROLES
from tests.helpers import make_settings

from orchestrator.config.secrets import Redactor
from orchestrator.engine.controls import RunControls
from orchestrator.engine.human import AnswersFile
from orchestrator.engine.runner import RunOutcome, RunRequest, RunServices, execute_prepared, prepare_run
from orchestrator.observability.config import ExportConfig
from orchestrator.observability.live import attach_trace, run_info, run_listener
from orchestrator.observability.sink import SpanSink, to_readable
from orchestrator.observability.spans import fold_spans, span_id_for, timestamp_ns, trace_id_for
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="planner", task="plan")),
        turn("planner", call("agent", role="coder", task="code")),
        turn("coder", call("run_shell", command="no-such-command-xyz")),
        turn("coder", call("ask_human", question="Which branch?")),
        turn("coder", call("run_shell", command="sleep 20")),
        turn("planner", finish("re-planned"), last="[Operator plan modification"),
        turn("lead", finish("done"), last="re-planned", content="Everything is in place."),
    ]
}
TRIGGERS = {"handlerRole": "loop_detector", "everyToolCalls": 1000, "everyTokens": 10_000_000}


def in_memory_sink(capture: bool = False) -> tuple[SpanSink, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    config = ExportConfig(endpoint="memory://", capture_content=capture, shutdown_timeout_seconds=10)
    return SpanSink(config, exporter, schedule_delay_millis=50), exporter


async def scripted_run(
    tmp_path: Path, sim_for: Any, *, capture: bool = False, redactor: Redactor | None = None
) -> tuple[RunOutcome, Any, list[Any]]:
    """The scripted run with delegation, a failing tool, a question and a plan modification; its outcome,
    settings and the spans the live export sent."""
    sink, exporter = in_memory_sink(capture)
    async with sim_for(SCRIPT) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles=ROLES, interruptTriggers={**TRIGGERS, "planOwnerRole": "planner"}
        )
        prepared = prepare_run(settings, tmp_path, RunRequest(task="ship it; token sk-secret-value-123"))
        controls: list[RunControls] = []

        def operator(event: RunEvent) -> None:
            if type(event).__name__ == "ToolCallEvent" and "sleep" in event.payload.arguments:
                controls[0].modify_plan("use the new approach")

        services = RunServices(
            timeouts=FAST, human=AnswersFile({"Which branch?": "main"}), log_listeners=[operator], redactor=redactor
        )
        attach_trace(services, run_listener(sink, prepared.run_dir, settings))
        outcomes: list[RunOutcome] = []

        async def execute(task_status: trio.TaskStatus[RunControls] = trio.TASK_STATUS_IGNORED) -> None:
            outcomes.append(await execute_prepared(settings, tmp_path, prepared, services, task_status=task_status))

        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                controls.append(await nursery.start(execute))
    report = await trio.to_thread.run_sync(sink.close)
    assert report.dropped == 0
    return outcomes[0], settings, list(exporter.get_finished_spans())


#: what only the live export knows (the log does not record the first streamed chunk)
LIVE_ONLY = frozenset({"gen_ai.response.time_to_first_chunk"})


def comparable(span: ReadableSpan) -> tuple[Any, ...]:
    events = tuple((e.name, e.timestamp, tuple(sorted(e.attributes.items()))) for e in span.events)
    attributes = tuple(
        sorted(
            (k, tuple(v) if isinstance(v, tuple | list) else v)
            for k, v in span.attributes.items()
            if k not in LIVE_ONLY
        )
    )
    return (
        span.name,
        span.context.trace_id,
        span.context.span_id,
        span.parent.span_id if span.parent else None,
        span.start_time,
        span.end_time,
        attributes,
        events,
        span.status.status_code,
        tuple((link.context.trace_id, link.context.span_id) for link in span.links),
    )


async def test_live_export_mirrors_the_role_tree_and_agrees_with_the_log(tmp_path: Path, sim_for) -> None:
    outcome, _, spans = await scripted_run(tmp_path, sim_for)
    assert outcome.card.summary == "done"
    events = read_events(outcome.run_dir / "log.jsonl")
    by_id = {s.context.span_id: s for s in spans}
    assert len(by_id) == len(spans)
    assert {s.context.trace_id for s in spans} == {trace_id_for(outcome.run_id)}
    run = next(s for s in spans if s.name == "run")
    assert run.parent is None and run.attributes["orchestrator.run.status"] == "success"

    def parent_name(span: ReadableSpan) -> str | None:
        return by_id[span.parent.span_id].name if span.parent else None

    roles = {s.attributes["gen_ai.agent.id"]: s for s in spans if s.name.startswith("invoke_agent ")}
    assert sorted(roles) == ["coder-2-3", "lead-0-1", "planner-1-2"]
    assert parent_name(roles["lead-0-1"]) == "run"
    assert parent_name(roles["planner-1-2"]) == "invoke_agent lead"
    assert parent_name(roles["coder-2-3"]) == "invoke_agent planner"
    # role spans open and close at their role_start / role_finished
    for start in of_type(events, "role_start"):
        assert roles[start["roleId"]].start_time == timestamp_ns(
            next(e["timestamp"] for e in events if e["type"] == "role_start" and e["payload"] is start)
        )
    for e in events:
        if e["type"] == "role_finished":
            assert roles[e["payload"]["roleId"]].end_time == timestamp_ns(e["timestamp"])
    assert run.end_time == roles["lead-0-1"].end_time
    coder = roles["coder-2-3"]
    assert coder.status.status_code is StatusCode.ERROR and coder.attributes["error.type"] == "interrupted"

    # one chat span per model call, under its role, with the usage the log recorded
    chats = [s for s in spans if s.name == "chat sim"]
    calls = of_type(events, "llm_call")
    assert len(chats) == len(of_type(events, "llm_call_start"))
    finished_chats = [c for c in chats if "gen_ai.usage.input_tokens" in c.attributes]
    assert len(finished_chats) == len(calls)
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in finished_chats) == sum(
        c["usage"]["promptTokens"] for c in calls
    )
    assert all(
        c.attributes["gen_ai.request.model"] == "sim" and c.attributes["gen_ai.operation.name"] == "chat" for c in chats
    )
    assert all(c.attributes["gen_ai.response.model"] == "sim" for c in finished_chats)  # the sim names it
    assert all(parent_name(c).startswith("invoke_agent ") for c in chats)
    # the live export's own clock: the first streamed chunk of a call that streamed text (the lead's last)
    streamed = [c for c in finished_chats if "gen_ai.response.time_to_first_chunk" in c.attributes]
    assert [parent_name(c) for c in streamed] == ["invoke_agent lead"]
    first = streamed[0].attributes["gen_ai.response.time_to_first_chunk"]
    assert 0 <= first <= (streamed[0].end_time - streamed[0].start_time) / 1e9 + 0.002  # log times: whole ms

    # the failing tool: an error span with its exit code; the cut one ends with the role
    tools = [s for s in spans if s.name == "execute_tool run_shell"]
    assert len(tools) == 2 and all(parent_name(t) == "invoke_agent coder" for t in tools)
    failed = next(t for t in tools if t.attributes.get("orchestrator.tool.exit_code") == 127)
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["orchestrator.tool.arguments_size"] > 0
    assert failed.attributes["orchestrator.tool.result_size"] > 0
    assert not [s for s in spans if s.name in ("execute_tool agent", "execute_tool ask_human")]

    # the question: an event on the coder with the time waited
    (question,) = [e for e in coder.events if e.name == "orchestrator.question"]
    asked = next(e for e in events if e["type"] == "ask_human")
    answered = next(e for e in events if e["type"] == "human_answer")
    assert question.timestamp == timestamp_ns(asked["timestamp"])
    wait = (timestamp_ns(answered["timestamp"]) - timestamp_ns(asked["timestamp"])) // 1_000_000
    assert question.attributes["orchestrator.question.wait_ms"] == wait
    assert question.attributes["orchestrator.question.answered"] is True

    # the plan modification: a span of the planner it suspends, until the cut coder finished
    (plan,) = [s for s in spans if s.name == "plan_modification"]
    assert parent_name(plan) == "invoke_agent planner"
    assert tuple(plan.attributes["orchestrator.plan.aborted"]) == ("coder-2-3",)
    assert plan.end_time == coder.end_time
    # message content is off by default
    assert not any(k.startswith("gen_ai.input") or k == "orchestrator.role.task" for s in spans for k in s.attributes)


async def test_export_trace_folds_the_log_into_the_same_spans_as_the_live_export(tmp_path: Path, sim_for) -> None:
    outcome, settings, live = await scripted_run(tmp_path, sim_for)
    info = run_info(outcome.run_dir, settings.deployment)
    folded = fold_spans(info, read_events(outcome.run_dir / "log.jsonl"))
    sink, _ = in_memory_sink()
    exported = [to_readable(span, sink.resource) for span in folded]
    assert sorted(map(comparable, exported)) == sorted(map(comparable, live))
    sink.close()


async def test_content_capture_goes_through_the_logs_redaction(tmp_path: Path, sim_for) -> None:
    redactor = Redactor(["sk-secret-value-123"])
    outcome, _, spans = await scripted_run(tmp_path, sim_for, capture=True, redactor=redactor)
    assert outcome.card.summary == "done"
    lead = next(s for s in spans if s.name == "invoke_agent lead")
    assert "<redacted>" in lead.attributes["orchestrator.role.task"]
    assert not any("sk-secret-value-123" in str(v) for s in spans for v in s.attributes.values())
    assert any("gen_ai.output.messages" in s.attributes for s in spans)
    assert any("gen_ai.tool.call.arguments" in s.attributes for s in spans)


def _deployment(tmp_path: Path) -> Any:
    return make_settings(tmp_path, "http://127.0.0.1:9/v1").deployment


def test_span_ids_are_derived_from_the_run_id() -> None:
    assert span_id_for("run-20260101-090000", "run") == span_id_for("run-20260101-090000", "run")
    assert span_id_for("run-20260101-090000", "run") != span_id_for("run-20260101-090001", "run")
    assert trace_id_for("run-20260101-090000").bit_length() <= 128


async def test_a_resumed_runs_listener_folds_the_log_on_disk_first_and_sends_only_what_ends_after(
    tmp_path: Path, sim_for
) -> None:
    """The second process of a run: ``run_listener`` reads the log written so far without sending it,
    then the spans that end after the restart carry the ids and start times the first process gave them."""
    outcome, settings, _ = await scripted_run(tmp_path, sim_for)
    events = read_events(outcome.run_dir / "log.jsonl")
    cut = next(i for i, e in enumerate(events) if e["type"] == "ask_human")  # "killed" while waiting
    log = outcome.run_dir / "log.jsonl"
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events[:cut]))
    sink, exporter = in_memory_sink()
    listener = run_listener(sink, outcome.run_dir, settings)
    assert sink.submitted == 0  # the prior log is folded silently
    for event in events[cut:]:
        listener(msgspec.convert(event, RunEvent), msgspec.json.encode(event))
    sink.close()
    later = {s.context.span_id: s for s in exporter.get_finished_spans()}
    whole = {s.span_id: s for s in fold_spans(run_info(outcome.run_dir, settings.deployment), events)}
    assert set(later) <= set(whole)
    coder = next(s for s in later.values() if s.name == "invoke_agent coder")
    assert coder.start_time == whole[coder.context.span_id].start_ns  # started in the "first process"
    assert {s.name for s in later.values()} >= {"run", "invoke_agent lead", "invoke_agent planner", "plan_modification"}
