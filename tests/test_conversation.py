"""``orchestrator.conversation``: the wire shape of the conversation types (camelCase, defaults omitted)."""

from __future__ import annotations

import msgspec

from orchestrator.conversation import CardError, FunctionCall, Message, ResultCard, ToolCall, ToolResult, Usage


def test_a_message_round_trips_camel_case_with_defaults_omitted() -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="run_shell", arguments='{"command": "ls"}'))
    message = Message(role="assistant", content="", reasoning="think", tool_calls=[call])
    encoded = msgspec.json.encode(message)
    assert msgspec.json.decode(encoded) == {
        "role": "assistant",
        "reasoning": "think",
        "toolCalls": [{"id": "c1", "function": {"name": "run_shell", "arguments": '{"command": "ls"}'}}],
    }
    assert msgspec.json.decode(encoded, type=Message) == message
    assert msgspec.json.decode(msgspec.json.encode(Message(role="tool", tool_call_id="c1"))) == {
        "role": "tool",
        "toolCallId": "c1",
    }


def test_a_tool_result_is_ok_only_on_success_and_omits_unset_fields() -> None:
    assert ToolResult(kind="success", data={"n": 1}).ok
    failed = ToolResult(kind="timeout", message="too slow")
    assert not failed.ok
    assert msgspec.json.decode(msgspec.json.encode(failed)) == {"kind": "timeout", "message": "too slow"}


def test_a_result_card_and_usage_on_the_wire() -> None:
    card = ResultCard(status="error", summary="no", error=CardError(kind="timeout", message="late"))
    assert msgspec.json.decode(msgspec.json.encode(card)) == {
        "status": "error",
        "summary": "no",
        "error": {"kind": "timeout", "message": "late"},
    }
    assert msgspec.json.decode(msgspec.json.encode(Usage(prompt_tokens=3, total_tokens=5))) == {
        "promptTokens": 3,
        "completionTokens": 0,
        "totalTokens": 5,
    }
