"""The bounded inspection tools and run-log readers (pure, no run needed)."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.conversation import FunctionCall, Message, ToolCall
from orchestrator.engine.inspection import (
    LOG_PAGE_CAP,
    READ_WINDOW_CAP,
    SEARCH_MATCH_CAP,
    list_role_messages,
    read_message_window,
    read_run_log,
    recent_role_tool_calls,
    search_role_blocks,
    search_run_log,
)
from orchestrator.engine.state import RoleFrame


def _frame() -> RoleFrame:
    calls = [
        ToolCall(id=f"c{i}", function=FunctionCall(name="run_shell", arguments='{"command":"ls"}')) for i in range(3)
    ]
    history = [
        Message(role="system", content="sys"),
        Message(role="user", content="task " + "x" * 5000),
    ]
    for call in calls:
        history.append(Message(role="assistant", content="", reasoning="hmm needle", tool_calls=[call]))
        history.append(Message(role="tool", content='{"kind":"success","data":1}', tool_call_id=call.id))
    return RoleFrame(instance_id="coder-1-2", role="coder", depth=1, task="t", history=history)


def test_list_role_messages_gives_sizes_not_text() -> None:
    data = list_role_messages(_frame()).data
    assert data["messages"][1] == {
        "index": 1,
        "role": "user",
        "contentChars": 5005,
        "reasoningChars": 0,
        "toolCallCount": 0,
    }
    assert "xxxxx" not in json.dumps(data)


def test_read_message_window_is_hard_capped() -> None:
    result = read_message_window(_frame(), 1, "content", 0, 100_000)
    assert result.ok and len(result.data["text"]) == READ_WINDOW_CAP and result.data["capped"]
    assert read_message_window(_frame(), 1, "content", 10, 20).data["text"] == "x" * 10
    assert read_message_window(_frame(), 99, "content", 0, 1).kind == "invalid_arguments"
    assert read_message_window(_frame(), 1, "body", 0, 1).kind == "invalid_arguments"
    assert read_message_window(_frame(), 1, "content", 5, 2).kind == "invalid_arguments"


def test_search_role_blocks_caps_matches_and_reports_the_total() -> None:
    data = search_role_blocks(_frame(), "x", max_matches=1000).data
    assert len(data["matches"]) == SEARCH_MATCH_CAP and data["totalMatches"] == 5000 and data["capped"]
    found = search_role_blocks(_frame(), "need+le", kind="regex", field="reasoning").data
    assert found["totalMatches"] == 3 and all(m["field"] == "reasoning" for m in found["matches"])
    assert search_role_blocks(_frame(), "(", kind="regex").kind == "invalid_arguments"


def test_recent_role_tool_calls_shows_the_loop_signature() -> None:
    data = recent_role_tool_calls(_frame(), limit=2).data
    assert data["totalCalls"] == 3 and len(data["calls"]) == 2
    assert data["calls"][0] == data["calls"][1]
    assert data["calls"][0]["resultKind"] == "success" and len(data["calls"][0]["argumentHash"]) == 12


def test_run_log_readers_page_search_and_refuse_before_a_log_exists(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    assert read_run_log(log).kind == "unavailable" and search_run_log(log, "x").kind == "unavailable"
    lines = [
        json.dumps({"timestamp": f"t{i}", "type": "tool_call" if i % 2 else "llm_call", "payload": {"n": i}})
        for i in range(300)
    ]
    log.write_text("\n".join(lines) + "\n")
    page = read_run_log(log, offset=290, limit=1000).data
    assert page["totalEvents"] == 300 and [e["index"] for e in page["events"]] == list(range(290, 300))
    assert not page["more"] and len(read_run_log(log, limit=10_000).data["events"]) == LOG_PAGE_CAP
    found = search_run_log(log, '"N": 7}', event_type="tool_call").data
    assert found["totalMatches"] == 1 and found["matches"][0]["index"] == 7
    assert search_run_log(log, "TOOL_CALL", limit=5).data["totalMatches"] == 150
