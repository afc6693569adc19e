"""The pure fold of log events into spans: synthetic logs (``tests/flow/script.py``), a 1,000-operation
run folded live and from its file, a restart split across two processes, interludes, retries,
compactions, continuations and unfinished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
from tests.flow.fixtures import SCENARIOS
from tests.flow.script import Instance, Script

from orchestrator.observability.runfold import TraceListener
from orchestrator.observability.spans import (
    RunInfo,
    SpanData,
    TraceState,
    close_open,
    fold_span,
    fold_spans,
    span_id_for,
    trace_id_for,
)
from orchestrator.runlog import read_events
from orchestrator.runlog.events import RunEvent

RUN = "run-20260101-090000"
INFO = RunInfo(run_id=RUN, started_at="2026-01-01T08:59:59.500Z", model="tiny")


class Collect:
    """A sink that keeps what it is given, folding at once what is deferred to it."""

    def __init__(self, capture: bool = False) -> None:
        self.capture_content = capture
        self.spans: list[SpanData] = []
        self.unfolded = 0

    def submit(self, spans: Any) -> None:
        self.spans.extend(spans)

    def defer(self, fold: Any, item: Any, *, always: bool = False) -> bool:
        self.submit(fold(item))
        return True


def live(
    events: list[dict[str, Any]], info: RunInfo = INFO, prior: list[dict[str, Any]] | None = None
) -> list[SpanData]:
    """What the live listener sends for ``events``, each given as the engine's typed event and its line."""
    sink = Collect()
    listener = TraceListener(sink, info, prior or [])
    for event in events:
        typed = msgspec.convert(event, RunEvent)
        listener(typed, msgspec.json.encode(typed) + b"\n")
    return sink.spans


def by_key(spans: list[SpanData]) -> dict[str, SpanData]:
    out = {s.key: s for s in spans}
    assert len(out) == len(spans), "a span was sent twice"
    return out


def parent_key(spans: dict[str, SpanData], span: SpanData) -> str | None:
    ids = {s.span_id: k for k, s in spans.items()}
    return None if span.parent_id is None else ids[span.parent_id]


def big_run(operations: int = 1000) -> list[dict[str, Any]]:
    """A lead delegating to coders, each doing turns and tool calls (some failing) until ``operations``
    tool calls and model calls have been told."""
    s = Script()
    lead = s.start("lead", "do a lot")
    s.think(lead)
    done = 0
    coder_number = 0
    while done < operations:
        coder_number += 1
        coder = s.start("coder", f"part {coder_number}", lead)
        for k in range(25):
            s.think(coder)
            s.reply(coder, 1000 + k, 20, cached=500)
            s.tool_call(coder, "run_shell", command=f"step {k}")
            if k % 5 == 4:
                s.tool_result(coder, "run_shell", {"command": "x", "exitCode": 127, "stdout": "", "stderr": "nope"})
            else:
                s.tool_result(coder, "run_shell", {"command": "x", "exitCode": 0, "stdout": "ok", "stderr": ""})
            done += 2
        s.finish(coder, f"part {coder_number} done")
        s.reply(lead, 900, 10)
        s.think(lead)
    s.reply(lead, 900, 10)
    s.finish(lead, "all done")
    return s.events


def test_a_thousand_operation_log_folds_to_the_same_spans_live_and_from_its_file(tmp_path: Path) -> None:
    events = big_run(1000)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"".join(msgspec.json.encode(e) + b"\n" for e in events))
    from_file = fold_spans(INFO, read_events(log))
    sent_live = live(events)
    assert from_file == sent_live
    spans = by_key(from_file)
    names = [s.name for s in from_file]
    assert names.count("execute_tool run_shell") == 500 and names.count("chat tiny") == 500 + 21
    failed = [s for s in from_file if s.name == "execute_tool run_shell" and s.status == "error"]
    assert len(failed) == 100 and all(s.attributes["orchestrator.tool.exit_code"] == 127 for s in failed)
    coder = spans["role:coder-1-2"]
    assert parent_key(spans, coder) == "role:lead-0-1" and parent_key(spans, spans["role:lead-0-1"]) == "run"
    assert spans["run"].attributes["gen_ai.usage.input_tokens"] == sum(
        e["payload"]["usage"]["promptTokens"] for e in events if e["type"] == "llm_call"
    )
    assert spans["run"].start_ns < spans["role:lead-0-1"].start_ns  # the run starts at meta.json's start time
    assert all(s.trace_id == trace_id_for(RUN) for s in from_file)


def test_a_model_call_carries_the_model_the_endpoint_answered_with() -> None:
    s = Script()
    lead = s.start("lead", "go")
    s.think(lead)
    s.reply(lead, 100, 5)
    s.think(lead)
    s.reply(lead, 100, 5)
    s.finish(lead, "done")
    calls = [e for e in s.events if e["type"] == "llm_call"]
    calls[0]["payload"]["responseModel"] = "qwen3-8b-q4"  # the second call's endpoint did not say
    chats = [span for span in fold_spans(INFO, s.events) if span.name == "chat tiny"]
    assert [c.attributes.get("gen_ai.response.model") for c in chats] == ["qwen3-8b-q4", None]
    assert all(c.attributes["gen_ai.request.model"] == "tiny" for c in chats)


def _crashed_and_resumed() -> tuple[list[dict[str, Any]], int]:
    """A run killed mid model call and mid tool call, then resumed; the index of ``run_resumed``."""
    s = Script()
    lead = s.start("lead", "go")
    s.think(lead)
    s.reply(lead, 100, 5)
    coder = s.start("coder", "work", lead)
    s.think(coder)
    s.reply(coder, 100, 5)
    s.tool_call(coder, "run_shell", command="make")  # killed here
    s.emit("run_resumed", {"runId": RUN, "resumedFrames": 2})
    resumed_at = len(s.events) - 1
    s.think(coder)
    s.reply(coder, 120, 5)
    s.finish(coder, "built")
    s.reply(lead, 100, 5)
    s.finish(lead, "done")
    return s.events, resumed_at


def test_a_resumed_run_continues_the_same_trace_with_the_gap_visible() -> None:
    events, at = _crashed_and_resumed()
    first = live(events[:at])
    second = live(events[at:], prior=events[:at])
    assert sorted(first + second, key=lambda s: s.key) == sorted(fold_spans(INFO, events), key=lambda s: s.key)
    spans = by_key(first + second)
    assert set(by_key(first)) == {"chat:lead-0-1:1", "chat:coder-1-2:1"}  # only what ended before the kill
    gap = spans["resume:1"]
    assert parent_key(spans, gap) == "run"
    assert gap.attributes["orchestrator.resume.gap_ms"] == 1000 and gap.attributes["orchestrator.resume.frames"] == 2
    cut = spans["tool:coder-1-2:1"]
    assert cut.status == "error" and cut.attributes["error.type"] == "interrupted" and cut.end_ns == gap.start_ns
    coder = spans["role:coder-1-2"]
    assert coder.start_ns < gap.start_ns < gap.end_ns < coder.end_ns  # one role span across the restart
    assert spans["run"].attributes["orchestrator.run.resumes"] == 1
    assert [e.name for e in spans["run"].events] == ["orchestrator.run.resumed"]


def test_a_handler_role_runs_under_the_interlude_of_the_role_it_suspends() -> None:
    events = next(sc for sc in SCENARIOS if sc.id == "operator-inquiry").events
    spans = by_key(fold_spans(INFO, events))
    interlude = spans["interlude:1"]
    assert interlude.name == "interlude inquiry"
    assert parent_key(spans, interlude) == "role:coder-1-2"
    handler = next(s for s in spans.values() if s.name == "invoke_agent inquiry_responder")
    assert parent_key(spans, handler) == "interlude:1"
    assert handler.attributes["orchestrator.role.handler_for"] == "coder-1-2"
    observed = [e for e in spans["role:coder-1-2"].events if e.name == "orchestrator.observe"]
    assert observed and observed[0].attributes["orchestrator.details"] == "recent_role_tool_calls"


def test_every_scenario_folds_into_one_tree_under_the_run() -> None:
    for scenario in SCENARIOS:
        spans = by_key(fold_spans(INFO, scenario.events))
        assert sum(1 for s in spans.values() if s.parent_id is None) == 1, scenario.id
        ids = {s.span_id for s in spans.values()}
        assert all(s.parent_id in ids for s in spans.values() if s.parent_id is not None), scenario.id
        assert all(s.start_ns <= s.end_ns for s in spans.values()), scenario.id


def _one_role(script: Script) -> Instance:
    lead = script.start("lead", "go")
    script.think(lead)
    return lead


def test_retries_are_events_of_their_model_call_and_an_unavailable_model_fails_it() -> None:
    s = Script()
    lead = _one_role(s)
    for attempt in (1, 2):
        retry = {"attempt": attempt, "attempts": 3, "cause": "http", "message": "503", "delaySeconds": 0.5}
        s.emit("llm_retry", {"role": "lead", "roleId": lead.role_id, **retry})
    s.emit("llm_unavailable", {"role": "lead", "roleId": lead.role_id, "message": "gave up", "attempts": 3})
    s.finish(lead, "no model", status="error", error="llm_unavailable")
    spans = by_key(fold_spans(INFO, s.events))
    chat = spans["chat:lead-0-1:1"]
    assert [e.attributes["orchestrator.retry.attempt"] for e in chat.events] == [1, 2]
    assert chat.attributes["orchestrator.llm.retries"] == 2
    assert chat.status == "error" and chat.attributes["error.type"] == "llm_unavailable"
    assert spans["run"].status == "error" and spans["run"].attributes["orchestrator.run.status"] == "error"


def test_a_compaction_is_a_span_of_its_role() -> None:
    s = Script()
    lead = _one_role(s)
    compaction = {"droppedMessages": 4, "truncatedToolMessages": 1, "strippedReasoningMessages": 0}
    sizes = {"estimatedPromptTokens": 900, "contextWindow": 1000}
    s.emit("context_compacted", {"role": "lead", "roleId": lead.role_id, **compaction, **sizes})
    s.reply(lead, 10, 1)
    s.finish(lead, "ok")
    spans = by_key(fold_spans(INFO, s.events))
    (key,) = [k for k in spans if k.startswith("compaction:")]
    assert parent_key(spans, spans[key]) == "role:lead-0-1"
    assert spans[key].attributes["orchestrator.compaction.dropped_messages"] == 4


def test_a_continued_run_links_to_the_run_it_continues() -> None:
    info = RunInfo(run_id=RUN, started_at=None, continues_from="run-20251231-235959")
    s = Script()
    _one_role(s)
    spans = by_key(fold_spans(info, s.events))
    run = spans["run"]
    assert run.links == ((trace_id_for("run-20251231-235959"), span_id_for("run-20251231-235959", "run")),)
    assert run.attributes["orchestrator.run.continues_from"] == "run-20251231-235959"


def test_an_unfinished_run_is_closed_at_its_last_event_as_unfinished() -> None:
    s = Script()
    lead = _one_role(s)
    s.tool_call(lead, "run_shell", command="sleep 1000")
    state = TraceState(INFO)
    sent = [span for event in s.events for span in fold_span(state, event)]
    assert sent == []  # nothing ended
    closed = by_key(close_open(state))
    assert set(closed) == {"run", "role:lead-0-1", "chat:lead-0-1:1", "tool:lead-0-1:1"}
    assert all(c.status == "error" and c.attributes["error.type"] == "unfinished" for c in closed.values())
    assert {c.end_ns for c in closed.values()} == {state.last_ns}


def test_garbage_events_are_skipped() -> None:
    state = TraceState(INFO)
    for event in (
        {},
        {"type": "role_start", "timestamp": "not a time", "payload": {}},
        {"type": "role_start", "timestamp": "2026-01-01T09:00:00Z", "payload": []},
        {"type": "tool_result", "timestamp": "2026-01-01T09:00:00Z", "payload": {"tool": 3}},
        {"type": "human_answer", "timestamp": "2026-01-01T09:00:00Z", "payload": {"id": "q-9"}},
        {"type": "interrupt_resolved", "timestamp": "2026-01-01T09:00:00Z", "payload": {"target": "x"}},
    ):
        assert fold_span(state, event) == []


def test_a_writers_timestamp_parses_as_any_iso_timestamp() -> None:
    from datetime import UTC, datetime, timedelta

    from hypothesis import given
    from hypothesis import strategies as st

    from orchestrator.flow.foldstate import epoch
    from orchestrator.observability.spans import timestamp_ns

    @given(st.integers(min_value=0, max_value=4_000_000_000_000))
    def check(ms: int) -> None:
        stamp = (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")
        written = stamp.replace("+00:00", "Z")
        assert timestamp_ns(written) == timestamp_ns(stamp) == ms * 1_000_000
        seconds = epoch(written)
        assert seconds is not None and timestamp_ns(written) == round(seconds * 1000) * 1_000_000

    check()
    assert timestamp_ns("2026-13-01T00:00:00.000Z") is None and timestamp_ns("2026-01-01T00:00:00.0x0Z") is None
