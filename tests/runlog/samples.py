"""Sample run-log events for the writer and reader tests: one of each shape the engine writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator.conversation import FunctionCall, Message, ResultCard, ToolCall, ToolResult, Usage
from orchestrator.engine import events as ev
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog.events import RunEvent
from orchestrator.runlog.writer import RunLog

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


def sample_events() -> list[RunEvent]:
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


def write_log(path: Path, events: list[RunEvent], level: Any = "full") -> RunLog:
    with RunLog(path, level) as log:
        for event in events:
            log.emit(event)
    return log
