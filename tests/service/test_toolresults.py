"""``service.toolresults``: a turn's calls joined to their logged events through the aggregate (no I/O)."""

from __future__ import annotations

import json
from typing import Any

from orchestrator.flow.toolview import FileView, TerminalView, WriteView
from orchestrator.service.logwindow import aggregate
from orchestrator.service.toolresults import event_result, turn_results, turn_results_builtins


def _e(type_: str, **payload: Any) -> dict[str, Any]:
    return {"type": type_, "timestamp": "2026-01-01T00:00:00Z", "payload": {"role": "coder", "roleId": "c1", **payload}}


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def _turn(*calls: dict[str, Any]) -> dict[str, Any]:
    return _e("llm_call", messageCount=1, usage={}, received={"content": "", "toolCalls": list(calls)})


def _log() -> list[dict[str, Any]]:
    return [
        _e("role_start", depth=0, task="go"),  # 0
        _e("llm_call_start"),  # 1
        _turn(_call("a", "read_file", path="f"), _call("b", "write_file", path="f", content="new\n")),  # 2
        _e("tool_call", tool="read_file", arguments='{"path": "f"}'),  # 3
        _e(
            "tool_result",
            tool="read_file",
            kind="success",
            result={"kind": "success", "data": {"path": "f", "content": "old\n", "truncated": False}},
        ),  # 4
        _e("tool_call", tool="write_file", arguments=json.dumps({"path": "f", "content": "new\n"})),  # 5
        _e(
            "tool_result",
            tool="write_file",
            kind="success",
            result={"kind": "success", "data": {"path": "f", "bytes": 4}},
        ),
        _e("llm_call_start"),  # 7
        _turn(_call("c", "run_shell", command="sleep 9")),  # 8
        _e("tool_call", tool="run_shell", arguments='{"command": "sleep 9"}'),  # 9: still running
    ]


def test_a_turns_calls_get_their_results_and_a_running_one_shows_pending() -> None:
    events = _log()
    agg = aggregate(events)
    read, write = turn_results(events, agg, 2) or []
    assert (read.call_id, read.call_index, read.index) == ("a", 3, 4) and isinstance(read.body, FileView)
    assert (write.call_id, write.index) == ("b", 6) and isinstance(write.body, WriteView)
    (shell,) = turn_results(events, agg, 8) or []
    assert (shell.kind, shell.call_index, shell.index) == (None, 9, None) and isinstance(shell.body, TerminalView)
    assert turn_results(events, agg, 3) is None  # not a model turn
    assert [r["callId"] for r in turn_results_builtins(events, agg, 2)] == ["a", "b"]


def test_an_event_answers_with_its_call_and_a_write_with_its_diff() -> None:
    events = _log()
    agg = aggregate(events)
    found = event_result(events, agg, 6)
    assert found is not None
    view, diff = found
    assert view.call_id == "b" and diff is not None and diff.known and diff.previous_index == 4
    assert [(line.op, line.text) for line in diff.lines] == [("-", "old"), ("+", "new")]
    read = event_result(events, agg, 3)
    assert read is not None and read[0].call_id == "a" and read[1] is None
    assert event_result(events, agg, 2) is None  # an llm_call is not a tool event
