"""A run's log condensed per role: calls, results, failures, cut-offs, the finish."""

from __future__ import annotations

from typing import Any

from orchestrator.foundry.trace import MAX_LINES, condense


def event(type_: str, **payload: Any) -> dict[str, Any]:
    return {"type": type_, "payload": payload, "timestamp": "2026-01-01T00:00:00.000Z"}


def test_each_role_gets_its_task_and_turns_in_order() -> None:
    events = [
        event("effort_set", effort="standard"),
        event("role_start", role="lead", roleId="lead-0-1", depth=0, task="Write done.txt"),
        event("llm_call", role="lead", roleId="lead-0-1", finishReason="length"),
        event("tool_call", role="lead", tool="agent", arguments='{"role": "coder"}'),
        event("role_start", role="coder", roleId="coder-1-2", depth=1, task="the step"),
        event("tool_call", role="coder", tool="run_shell", arguments='{"command": "ls"}'),
        event("tool_result", role="coder", tool="run_shell", kind="success", result={"kind": "success", "data": 1}),
        event("unknown_tool", role="coder", tool="nope", message="no tool nope"),
        event("tool_result", role="coder", tool="x", kind="error", result={"kind": "error", "message": "bad"}),
        event("role_finished", role="coder", roleId="coder-1-2", depth=1, status="error", summary="gave up"),
    ]
    lead, coder = condense(events)
    assert lead.role == "lead" and lead.task == "Write done.txt"
    assert lead.lines == ["cut off: the model's turn hit the output limit", 'call agent({"role": "coder"})']
    assert coder.lines == [
        'call run_shell({"command": "ls"})',
        "result run_shell [success]: 1",
        "error: unknown tool: no tool nope",
        "result x [error]: bad",
        "finished error: gave up",
    ]


def test_long_traces_keep_their_first_and_last_lines() -> None:
    events = [event("role_start", role="r", task="t" * 5000)]
    events += [event("tool_call", role="r", tool="run_shell", arguments=str(i)) for i in range(100)]
    (trace,) = condense(events)
    assert len(trace.lines) == MAX_LINES
    assert trace.lines[0] == "call run_shell(0)" and trace.lines[-1] == "call run_shell(99)"
    assert "lines left out" in trace.lines[MAX_LINES // 2]
    assert len(trace.task) == 600
