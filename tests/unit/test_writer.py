"""``RunLog`` (one whole line per event, the logging-level filter) and ``read_events`` (tolerant reading)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.engine import events as ev
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog.events import (
    EVENT_TYPES,
    FunctionCall,
    Message,
    ResultCard,
    RunEvent,
    ToolCall,
    ToolResult,
    Usage,
)
from orchestrator.runlog.reader import read_events
from orchestrator.runlog.writer import RunLog, apply_level

FRAME = RoleFrame(
    instance_id="worker-1-2",
    role="worker",
    depth=1,
    task="list files",
    parent_id="orchestrator-0-1",
    parent_role="orchestrator",
    history=[Message(role="system", content="sys"), Message(role="user", content="list files")],
)
CALL = ToolCall(id="call_1", function=FunctionCall(name="run_shell", arguments='{"command":"ls"}'))


def _events() -> list[RunEvent]:
    """One of each shape the engine writes, including both events the standard level slims."""
    assistant = Message(role="assistant", content="listing", reasoning="ls is enough", tool_calls=[CALL])
    return [
        ev.effort_set("standard"),
        ev.role_start(FRAME),
        ev.llm_call_start(FRAME),
        ev.llm_call(
            FRAME,
            FRAME.history,
            0,
            assistant,
            Usage(prompt_tokens=50, completion_tokens=9, total_tokens=59, cached_prompt_tokens=32),
            "tool_calls",
        ),
        ev.tool_call(FRAME, "run_shell", CALL.function.arguments),
        ev.tool_result(FRAME, "run_shell", ToolResult(kind="success", data={"stdout": "a\nb\n", "exitCode": 0})),
        ev.tool_result(FRAME, "run_shell", ToolResult(kind="timeout", message="too slow")),
        ev.llm_call(
            FRAME,
            [Message(role="tool", content="a\nb", tool_call_id="call_1")],
            2,
            Message(role="assistant", content="done"),
            Usage(),
            None,
        ),
        ev.failure("implicit_finish", FRAME, message="no tool calls"),
        ev.context_pressure(FRAME, 9000, 10000),
        ev.role_finished(FRAME, ResultCard(status="success", summary="done")),
        ev.run_resumed("20260101-000000", 2),
    ]


def _write(path: Path, events: list[RunEvent], level: Any = "full") -> RunLog:
    with RunLog(path, level) as log:
        for event in events:
            log.emit(event)
    return log


def test_each_event_is_one_line_that_decodes_back_to_it(tmp_path: Path) -> None:
    events = _events()
    log = _write(tmp_path / "log.jsonl", events)
    data = (tmp_path / "log.jsonl").read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert len(lines) == len(events) == log.count
    decoder = msgspec.json.Decoder(RunEvent)
    assert [decoder.decode(line) for line in lines] == events
    assert read_events(tmp_path / "log.jsonl") == [msgspec.to_builtins(e) for e in events]


def test_the_envelope_is_timestamp_type_payload_with_camel_case_keys(tmp_path: Path) -> None:
    _write(tmp_path / "log.jsonl", _events())
    records = read_events(tmp_path / "log.jsonl")
    assert all(set(r) == {"timestamp", "type", "payload"} for r in records)
    assert all(r["type"] in EVENT_TYPES for r in records)
    call = records[3]["payload"]
    assert set(call) == {"role", "roleId", "messageCount", "usage", "sentFrom", "sent", "received", "finishReason"}
    assert call["usage"] == {"promptTokens": 50, "completionTokens": 9, "totalTokens": 59, "cachedPromptTokens": 32}
    assert call["received"]["toolCalls"][0]["function"] == {"name": "run_shell", "arguments": '{"command":"ls"}'}
    assert "finishReason" not in records[7]["payload"]  # absent when the endpoint omits it, never null


def test_appending_reopens_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _write(path, _events()[:2])
    _write(path, _events()[2:4])
    assert [r["type"] for r in read_events(path)] == ["effort_set", "role_start", "llm_call_start", "llm_call"]


def test_the_standard_level_drops_exactly_the_bodies(tmp_path: Path) -> None:
    events = _events()
    _write(tmp_path / "full.jsonl", events, "full")
    _write(tmp_path / "standard.jsonl", events, "standard")
    full, standard = read_events(tmp_path / "full.jsonl"), read_events(tmp_path / "standard.jsonl")
    assert len(full) == len(standard) == len(events)
    for f, s in zip(full, standard, strict=True):
        dropped = {"llm_call": {"sent", "received", "sentFrom"}, "tool_result": {"result"}}.get(f["type"], set())
        assert s["type"] == f["type"] and s["timestamp"] == f["timestamp"]
        assert set(f["payload"]) - set(s["payload"]) == dropped & set(f["payload"])
        assert s["payload"] == {k: v for k, v in f["payload"].items() if k not in dropped}
    assert {"role", "roleId", "messageCount", "usage", "finishReason"} <= set(standard[3]["payload"])
    assert standard[5]["payload"]["kind"] == "success"


def test_apply_level_full_is_the_identity_and_never_mutates() -> None:
    for event in _events():
        before = msgspec.to_builtins(event)
        assert apply_level(event, "full") is event
        apply_level(event, "standard")
        assert msgspec.to_builtins(event) == before


def test_listeners_see_each_event_after_the_filter(tmp_path: Path) -> None:
    seen: list[RunEvent] = []
    with RunLog(tmp_path / "log.jsonl", "standard") as log:
        log.listeners.append(seen.append)
        for event in _events():
            log.emit(event)
    assert [msgspec.to_builtins(e) for e in seen] == read_events(tmp_path / "log.jsonl")


def test_close_is_idempotent(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "log.jsonl")
    log.close()
    log.close()


def test_a_missing_log_reads_as_empty(tmp_path: Path) -> None:
    assert read_events(tmp_path / "absent.jsonl") == []


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    events = _events()
    _write(path, events[:4])
    line = msgspec.json.encode(events[4])
    with path.open("ab") as f:
        f.write(line[: len(line) // 2])
    assert read_events(path) == [msgspec.to_builtins(e) for e in events[:4]]


def test_corrupt_and_foreign_lines_are_skipped_and_the_rest_kept(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    good = [msgspec.json.encode(e) for e in _events()[:3]]
    junk = [
        b"{not json",
        b"[1, 2]",
        b'{"type": 5}',
        b'"text"',
        b"\xff\xfe",
        b"   ",
        b'{"type": "future_event", "payload": {}}',
    ]
    path.write_bytes(b"\n".join([good[0], *junk[:4], good[1], *junk[4:], good[2]]) + b"\n")
    types = [r["type"] for r in read_events(path)]
    assert types == ["effort_set", "role_start", "future_event", "llm_call_start"]


def test_a_deeply_nested_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    _write(path, _events()[:2])
    with path.open("ab") as f:
        f.write(b'{"type":' * 2000)
    assert len(read_events(path)) == 2


_counter = itertools.count()


@settings(deadline=None, max_examples=200)
@given(
    tail=st.binary(max_size=300)
    | st.lists(
        st.sampled_from([b"{", b"}", b'"type"', b":", b'"x"', b",", b"\n", b"[", b"]", b"\r", b"\\"]), max_size=60
    ).map(b"".join),
    cut=st.integers(0, 5000),
)
def test_arbitrary_bytes_appended_never_make_the_reader_raise(
    tmp_path_factory: pytest.TempPathFactory, tail: bytes, cut: int
) -> None:
    path = tmp_path_factory.getbasetemp() / f"fuzz-{next(_counter)}.jsonl"
    events = _events()
    _write(path, events)
    data = path.read_bytes()
    cut = len(data) - cut % 400  # sometimes tear the last real line too
    path.write_bytes(data[:cut] + tail)
    records = read_events(path)
    complete = data[:cut].count(b"\n")
    assert records[:complete] == [msgspec.to_builtins(e) for e in events[:complete]]


def test_a_log_torn_by_a_kill_is_sealed_before_the_next_event(tmp_path: Path) -> None:
    from orchestrator.runlog import read_events
    from orchestrator.runlog.events import EffortSet, EffortSetPayload

    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"timestamp":"t","type":"effort_set","payload":{"effort":"quick"}}\n{"timestamp":"t","ty')
    with RunLog(path) as log:
        log.emit(EffortSet(timestamp="t2", payload=EffortSetPayload(effort="thorough")))
    events = read_events(path)
    assert [e["payload"]["effort"] for e in events] == ["quick", "thorough"]


def test_a_secret_in_any_event_is_redacted_before_it_is_written_or_heard(tmp_path: Path) -> None:
    """The writer's second line: a known value in an event's strings (escaped in JSON or not) is
    replaced, the line stays valid JSON of the same event type, and listeners get the clean event."""
    from orchestrator.config.secrets import Redactor

    secret = 'sk-"quoted"\\key'
    heard: list[RunEvent] = []
    with RunLog(tmp_path / "log.jsonl", redactor=Redactor([secret, "plain-secret-99"])) as log:
        log.listeners.append(heard.append)
        log.emit(ev.tool_call(FRAME, "run_shell", f'{{"command": "echo plain-secret-99 {secret}"}}'))
        log.emit(ev.tool_result(FRAME, "run_shell", ToolResult(kind="success", data={secret: [secret, 1]})))
        log.emit(ev.tool_result(FRAME, "run_shell", ToolResult(kind="success", data="nothing here")))
    raw = (tmp_path / "log.jsonl").read_text()
    assert "plain-secret-99" not in raw and "quoted" not in raw
    events = read_events(tmp_path / "log.jsonl")
    assert events[0]["payload"]["arguments"] == '{"command": "echo <redacted> <redacted>"}'
    assert events[1]["payload"]["result"]["data"] == {"<redacted>": ["<redacted>", 1]}
    assert events[2]["payload"]["result"]["data"] == "nothing here"
    assert [type(e) for e in heard] == [type(ev.tool_call(FRAME, "x", "")), *[type(heard[1])] * 2]
    assert "plain-secret-99" not in msgspec.json.encode(heard).decode()


def test_an_event_the_caller_already_redacted_is_not_scanned_again(tmp_path: Path) -> None:
    from orchestrator.config.secrets import Redactor

    with RunLog(tmp_path / "log.jsonl", redactor=Redactor(["plain-secret-99"])) as log:
        log.emit(ev.tool_result(FRAME, "t", ToolResult(kind="success", data="plain-secret-99")), redacted=True)
    assert "plain-secret-99" in (tmp_path / "log.jsonl").read_text()  # the caller's promise is trusted
