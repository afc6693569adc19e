"""``RunLog``: one whole line per event, the logging-level filter, listeners, sealing a torn log,
redaction of known secrets."""

from __future__ import annotations

from pathlib import Path

import msgspec
from tests.runlog.samples import FRAME, sample_events, write_log

from orchestrator.conversation import ToolResult
from orchestrator.engine import events as ev
from orchestrator.runlog.events import EVENT_TYPES, RunEvent
from orchestrator.runlog.reader import read_events
from orchestrator.runlog.writer import RunLog, apply_level


def test_each_event_is_one_line_that_decodes_back_to_it(tmp_path: Path) -> None:
    events = sample_events()
    log = write_log(tmp_path / "log.jsonl", events)
    data = (tmp_path / "log.jsonl").read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert len(lines) == len(events) == log.count
    decoder = msgspec.json.Decoder(RunEvent)
    assert [decoder.decode(line) for line in lines] == events
    assert read_events(tmp_path / "log.jsonl") == [msgspec.to_builtins(e) for e in events]


def test_the_envelope_is_timestamp_type_payload_with_camel_case_keys(tmp_path: Path) -> None:
    write_log(tmp_path / "log.jsonl", sample_events())
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
    write_log(path, sample_events()[:2])
    write_log(path, sample_events()[2:4])
    assert [r["type"] for r in read_events(path)] == ["effort_set", "role_start", "llm_call_start", "llm_call"]


def test_the_standard_level_drops_exactly_the_bodies(tmp_path: Path) -> None:
    events = sample_events()
    write_log(tmp_path / "full.jsonl", events, "full")
    write_log(tmp_path / "standard.jsonl", events, "standard")
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
    for event in sample_events():
        before = msgspec.to_builtins(event)
        assert apply_level(event, "full") is event
        apply_level(event, "standard")
        assert msgspec.to_builtins(event) == before


def test_listeners_see_each_event_after_the_filter(tmp_path: Path) -> None:
    seen: list[RunEvent] = []
    with RunLog(tmp_path / "log.jsonl", "standard") as log:
        log.listeners.append(seen.append)
        for event in sample_events():
            log.emit(event)
    assert [msgspec.to_builtins(e) for e in seen] == read_events(tmp_path / "log.jsonl")


def test_line_listeners_hear_each_event_first_with_its_line_as_written(tmp_path: Path) -> None:
    """The line is the file's own (after the level filter and redaction), a ``bytes`` copy the next event
    does not overwrite: safe to hand to another thread."""
    from orchestrator.config.secrets import Redactor

    order: list[str] = []
    lines: list[bytes] = []

    def line_listener(event: RunEvent, line: bytes) -> None:
        order.append("line")
        lines.append(line)

    with RunLog(tmp_path / "log.jsonl", "standard", Redactor(["plain-secret-99"])) as log:
        log.line_listeners.append(line_listener)
        log.listeners.append(lambda event: order.append("event"))
        for event in sample_events():
            log.emit(event)
        log.emit(ev.tool_call(FRAME, "run_shell", '{"command": "echo plain-secret-99"}'))
    assert all(isinstance(line, bytes) for line in lines)
    assert b"".join(lines) == (tmp_path / "log.jsonl").read_bytes()
    assert order == ["line", "event"] * len(lines)


def test_close_is_idempotent(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "log.jsonl")
    log.close()
    log.close()


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
