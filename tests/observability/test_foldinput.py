"""The fold's slim decode of log lines (``observability.foldinput``): over real runs' logs it folds to the
spans the whole lines fold to, with content capture off and on; a ``result`` is kept as logged only when
the fold reads nothing in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings
from tests.observability.test_live import scripted_run

from orchestrator.engine.runner import RunRequest, RunServices, execute_prepared, prepare_run
from orchestrator.observability.foldinput import event_decoder, read_fold_events
from orchestrator.observability.spans import RunInfo, SpanData, TraceState, close_open, fold_span
from orchestrator.observability.tracestate import json_size
from orchestrator.runlog.reader import decode_line, read_events

TOOLS_SCRIPT = {
    "turns": [
        turn("lead", call("context_info")),
        turn("lead", call("read_file", path="notes.txt")),  # content with escapes (\n, \t), no exit status
        turn("lead", call("read_file", path="control.txt")),  # a control character: \u0001
        turn("lead", call("run_shell", command="exit 3")),  # an exit status: decoded, a warning
        turn("lead", call("read_file", path="missing.txt")),  # an error result (a warning)
        turn("lead", finish("done")),
    ]
}


def fold_lines(lines: list[bytes], decode: Any, capture: bool) -> list[SpanData]:
    state = TraceState(RunInfo("run-1", model="sim", temperature=0.2), capture_content=capture)
    spans = [span for line in lines if (event := decode(line)) is not None for span in fold_span(state, event)]
    return spans + close_open(state)


async def tools_run_log(tmp_path: Path, sim_for: Any) -> Path:
    (tmp_path / "notes.txt").write_text('line one\n\tline "two"\n')
    (tmp_path / "control.txt").write_text("bell\x01\n")
    async with sim_for(TOOLS_SCRIPT) as sim:
        settings = make_settings(
            tmp_path, sim.base_url, roles={"lead": ["context_info", "read_file", "run_shell", "finish"]}
        )
        prepared = prepare_run(settings, tmp_path, RunRequest(task="look around"))
        with trio.fail_after(30):
            outcome = await execute_prepared(settings, tmp_path, prepared, RunServices(timeouts=FAST))
    assert outcome.card.status == "success", outcome.card
    return outcome.run_dir / "log.jsonl"


def assert_same_spans(log: Path) -> None:
    lines = log.read_bytes().split(b"\n")
    for capture in (False, True):
        whole = fold_lines(lines, decode_line, capture)
        slim = fold_lines(lines, event_decoder(capture_content=capture), capture)
        assert len(whole) > 3
        assert slim == whole, capture
        state = TraceState(RunInfo("run-1", model="sim", temperature=0.2), capture_content=capture)
        from_file = [s for e in read_fold_events(log, capture_content=capture) for s in fold_span(state, e)]
        assert from_file + close_open(state) == whole


async def test_the_slim_decode_folds_a_tool_run_to_the_spans_of_whole_lines(tmp_path: Path, sim_for: Any) -> None:
    log = await tools_run_log(tmp_path, sim_for)
    assert_same_spans(log)
    spans = fold_lines(log.read_bytes().split(b"\n"), event_decoder(capture_content=False), False)
    tools = [s for s in spans if s.name.startswith("execute_tool")]
    severities = [(s.name, s.attributes["orchestrator.tool.severity"]) for s in tools]
    assert severities[3:5] == [("execute_tool run_shell", "warn"), ("execute_tool read_file", "warn")]
    assert tools[3].attributes["orchestrator.tool.exit_code"] == 3
    assert all(s.attributes["orchestrator.tool.result_size"] > 0 for s in tools)


async def test_the_slim_decode_folds_a_delegating_run_to_the_spans_of_whole_lines(tmp_path: Path, sim_for: Any) -> None:
    """Delegation, a failing command, a question, an interlude and a plan modification."""
    outcome, _, _ = await scripted_run(tmp_path, sim_for)
    assert_same_spans(outcome.run_dir / "log.jsonl")


async def test_a_result_is_kept_as_logged_only_when_the_fold_reads_nothing_in_it(tmp_path: Path, sim_for) -> None:
    log = await tools_run_log(tmp_path, sim_for)
    decode = event_decoder(capture_content=False)
    kept = []
    for line in log.read_bytes().split(b"\n"):
        event, whole = decode(line), decode_line(line)
        if event is None or event["type"] != "tool_result":
            continue
        result = event["payload"]["result"]
        assert whole is not None
        if isinstance(result, msgspec.Raw):
            kept.append(event["payload"]["tool"])
            assert len(result) == json_size(whole["payload"]["result"])
            assert b"exitCode" not in bytes(result)
        else:
            assert result == whole["payload"]["result"]
    # context_info, the file with a newline and a tab, the missing file and finish; the file with a control
    # character (\u0001) and the command's result (its exit status) are decoded
    assert kept == ["context_info", "read_file", "read_file", "finish"], kept


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"   ",
        b"{not json",
        b'{"type": 3, "timestamp": "2026-01-01T00:00:00.000Z", "payload": {}}',
        b'{"type": "role_start", "timestamp": "2026-01-01T00:00:00.000Z", "payload": [1]}',
        b'{"type": "role_start", "timestamp": "2026-01-01T00:00:00.000Z"}',
        b"[1, 2]",
    ],
)
def test_a_line_the_fold_would_ignore_decodes_to_nothing(line: bytes) -> None:
    assert event_decoder(capture_content=False)(line) is None
    whole = decode_line(line)
    assert whole is None or not isinstance(whole.get("payload"), dict)


def test_only_the_keys_the_fold_reads_are_decoded() -> None:
    line = msgspec.json.encode(
        {
            "type": "llm_call",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "payload": {"roleId": "lead-0-1", "sent": [{"role": "user", "content": "hi"}], "usage": {"x": 1}},
        }
    )
    event = event_decoder(capture_content=False)(line)
    assert event == {
        "type": "llm_call",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "payload": {"roleId": "lead-0-1", "usage": {"x": 1}},
    }
    assert event_decoder(capture_content=True)(line) == decode_line(line)


def test_an_escaped_exit_code_key_is_still_read() -> None:
    line = (
        b'{"type":"tool_result","timestamp":"2026-01-01T00:00:00.000Z","payload":{"tool":"run_shell",'
        b'"kind":"success","result":{"kind":"success","data":{"exit\\u0043ode":2}}}}'
    )
    event = event_decoder(capture_content=False)(line)
    assert event is not None and event["payload"]["result"] == {"kind": "success", "data": {"exitCode": 2}}


def test_read_fold_events_of_a_missing_log_is_empty(tmp_path: Path) -> None:
    assert read_fold_events(tmp_path / "log.jsonl", capture_content=False) == []
    assert read_events(tmp_path / "log.jsonl") == []
