"""The engine's event constructors: each builds the right run-log event type with the right payload."""

from __future__ import annotations

import re

import msgspec
import pytest

from orchestrator import vocabulary as names
from orchestrator.conversation import CardError, Message, ResultCard, ToolResult, Usage
from orchestrator.engine import events
from orchestrator.engine.context import Compaction
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog import events as e

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _frame() -> RoleFrame:
    return RoleFrame(
        instance_id="coder-2", role="coder", depth=1, task="write it", parent_id="lead-1", parent_role="lead"
    )


def _line(event: e.RunEvent) -> dict[str, object]:
    """The event as its ``log.jsonl`` line decodes: ``timestamp``, ``type`` and ``payload``."""
    line = msgspec.json.decode(msgspec.json.encode(event))
    assert TIMESTAMP.match(line["timestamp"])
    return line


def test_role_start_carries_the_frame_identity_and_its_parent() -> None:
    line = _line(events.role_start(_frame()))
    assert line["type"] == names.ROLE_START
    assert line["payload"] == {
        "role": "coder",
        "roleId": "coder-2",
        "depth": 1,
        "task": "write it",
        "parent": "lead",
        "parentRoleId": "lead-1",
    }


def test_role_finished_copies_the_card_and_role_finished_for_matches_it() -> None:
    card = ResultCard(status="error", summary="no", error=CardError(kind="tool_error", message="boom"))
    from_frame = events.role_finished(_frame(), card)
    assert isinstance(from_frame, e.RoleFinished)
    assert from_frame.payload.status == "error" and from_frame.payload.error == card.error
    assert from_frame.payload.parent == "lead" and from_frame.payload.depth == 1
    orphan = events.role_finished_for("coder", "coder-2", 1, card, "lead")
    assert orphan.payload == from_frame.payload


def test_llm_call_logs_the_delta_without_reasoning_and_keeps_received_reasoning() -> None:
    sent = [Message(role="user", content="q"), Message(role="assistant", content="a", reasoning="hmm")]
    assistant = Message(role="assistant", content="answer", reasoning="because")
    usage = Usage(prompt_tokens=10, completion_tokens=2, total_tokens=12)
    event = events.llm_call(_frame(), sent, 3, assistant, usage, "stop")
    assert isinstance(event, e.LlmCall)
    payload = event.payload
    assert (payload.message_count, payload.sent_from, payload.finish_reason) == (5, 3, "stop")
    assert payload.sent == [sent[0], Message(role="assistant", content="a")]
    assert payload.received == e.Received(content="answer", reasoning="because")
    assert sent[1].reasoning == "hmm"  # the caller's history is not rewritten


def test_llm_call_without_a_finish_reason_omits_it_on_the_wire() -> None:
    event = events.llm_call(_frame(), [], 0, Message(role="assistant"), Usage(), None)
    assert "finishReason" not in _line(event)["payload"]


def test_llm_retry_rounds_the_delay_to_milliseconds() -> None:
    event = events.llm_retry(_frame(), attempt=2, attempts=5, cause="stall", message="slow", delay_seconds=1.23456)
    assert _line(event)["type"] == names.LLM_RETRY
    assert event.payload.delay_seconds == 1.235 and event.payload.role_id == "coder-2"


def test_tool_call_and_tool_result_name_the_tool_and_instance() -> None:
    call = events.tool_call(_frame(), "read_file", '{"path": "a"}')
    assert _line(call)["type"] == names.TOOL_CALL
    assert call.payload.arguments == '{"path": "a"}' and call.payload.role_id == "coder-2"
    result = events.tool_result(_frame(), "read_file", ToolResult(kind="ok", data="text"))
    assert _line(result)["type"] == names.TOOL_RESULT
    assert result.payload.kind == "ok" and result.payload.result == ToolResult(kind="ok", data="text")


def test_context_events_carry_the_compaction_counts_and_budget() -> None:
    compaction = Compaction(
        history=[],
        dropped_messages=4,
        truncated_tool_messages=2,
        stripped_reasoning_messages=1,
        estimated_prompt_tokens=900,
    )
    compacted = _line(events.context_compacted(_frame(), compaction, 4096))
    assert compacted["type"] == names.CONTEXT_COMPACTED
    assert compacted["payload"] == {
        "role": "coder",
        "roleId": "coder-2",
        "droppedMessages": 4,
        "truncatedToolMessages": 2,
        "strippedReasoningMessages": 1,
        "estimatedPromptTokens": 900,
        "contextWindow": 4096,
    }
    pressure = _line(events.context_pressure(_frame(), 3000, 3500))
    assert pressure["type"] == names.CONTEXT_PRESSURE
    assert pressure["payload"]["promptTokens"] == 3000 and pressure["payload"]["effectiveBudget"] == 3500


FAILURE_KINDS = {
    names.LLM_UNAVAILABLE: e.LlmUnavailable,
    names.CONTEXT_BUDGET_EXCEEDED: e.ContextBudgetExceeded,
    names.IMPLICIT_FINISH: e.ImplicitFinish,
    names.UNKNOWN_TOOL: e.UnknownTool,
    names.INVALID_TOOL_CALL: e.InvalidToolCall,
}


@pytest.mark.parametrize("kind", sorted(FAILURE_KINDS))
def test_failure_builds_the_event_of_its_kind_with_the_detail(kind: str) -> None:
    event = events.failure(kind, _frame(), message="went wrong", tool="shell", attempts=3)
    assert type(event) is FAILURE_KINDS[kind]
    line = _line(event)
    assert line["type"] == kind
    assert line["payload"] == {
        "role": "coder",
        "roleId": "coder-2",
        "message": "went wrong",
        "tool": "shell",
        "attempts": 3,
    }


def test_failure_rejects_a_kind_that_is_not_a_failure() -> None:
    with pytest.raises(KeyError):
        events.failure(names.ROLE_START, _frame())


def test_interrupt_events_omit_unset_optionals() -> None:
    raised = _line(events.interrupt("loop", "loop_checker", "coder-2"))
    assert raised["type"] == names.INTERRUPT
    assert raised["payload"] == {"trigger": "loop", "handler": "loop_checker", "target": "coder-2"}
    resolved = _line(events.interrupt_resolved("loop", "loop_checker", "coder-2", "continue", "success", "fine"))
    assert resolved["type"] == names.INTERRUPT_RESOLVED
    assert resolved["payload"]["handlerStatus"] == "success" and resolved["payload"]["action"] == "continue"


def test_plan_modification_and_observe_target_the_given_frame() -> None:
    plan = events.plan_modification(_frame(), "replan", ["tester-3"])
    assert _line(plan)["payload"] == {
        "target": "coder-2",
        "targetRole": "coder",
        "message": "replan",
        "aborted": ["tester-3"],
    }
    observe = _line(events.observe(_frame(), "read_file"))
    assert observe["type"] == names.OBSERVE and observe["payload"]["details"] == "read_file"


def test_the_remaining_constructors_tag_their_events() -> None:
    built: dict[str, e.RunEvent] = {
        names.EFFORT_SET: events.effort_set("quick"),
        names.AGENT_CALL: events.agent_call("lead", "coder", 1),
        names.LLM_CALL_START: events.llm_call_start(_frame()),
        names.DEPTH_EXCEEDED: events.depth_exceeded("lead", "coder", 5, "too deep"),
        names.ROLE_NOT_FOUND: events.role_not_found("ghost", None),
        names.OPERATOR_NOTICE: events.operator_notice(_frame(), "hello"),
        names.INQUIRY_DROPPED: events.inquiry_dropped("why?", "busy"),
        names.ASK_HUMAN: events.ask_human("q1", "which?", None, _frame()),
        names.HUMAN_ANSWER: events.human_answer("q1", "that one"),
        names.RUN_RESUMED: events.run_resumed("r1", 2),
    }
    for tag, event in built.items():
        assert _line(event)["type"] == tag
    assert _line(built[names.ROLE_NOT_FOUND])["payload"] == {"roleName": "ghost"}
    assert _line(built[names.ASK_HUMAN])["payload"] == {
        "id": "q1",
        "question": "which?",
        "role": "coder",
        "roleId": "coder-2",
    }
    assert _line(built[names.RUN_RESUMED])["payload"] == {"runId": "r1", "resumedFrames": 2}
