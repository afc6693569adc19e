"""The Responses-API wire: ``input_items``/``build_request`` out, ``TurnAssembler`` over streamed events in."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from orchestrator.conversation import FunctionCall, Message, ToolCall, Usage
from orchestrator.llm.sse import SseDecoder
from orchestrator.llm.wire import (
    AttemptFailed,
    FunctionTool,
    Turn,
    TurnAssembler,
    build_request,
    input_items,
)
from orchestrator.sim.matching import ResolvedUsage
from orchestrator.sim.script import ToolCall as SimToolCall
from orchestrator.sim.script import Turn as SimTurn
from orchestrator.sim.sseframes import ResponseMeta, build_stream

Deltas = list[tuple[str, str]]


def _usage(prompt: int = 120, completion: int = 30, cached: int = 0) -> ResolvedUsage:
    return ResolvedUsage(
        prompt_tokens=prompt, completion_tokens=completion, cached_prompt_tokens=cached, reasoning_tokens=0
    )


def _run_sim(turn: SimTurn, usage: ResolvedUsage | None = None) -> tuple[Turn, Deltas]:
    """Assemble the exact frames the sim would stream for ``turn``, through the SSE decoder."""
    plan = build_stream(turn, ResponseMeta(number=1, model="sim"), usage or _usage())
    deltas: Deltas = []
    assembler = TurnAssembler(lambda field, text: deltas.append((field, text)))
    decoder = SseDecoder()
    result: Turn | None = None
    for frame in plan.events:
        for event in decoder.feed(frame.frame):
            result = assembler.feed(event.event, event.data) or result
    for event in decoder.flush():
        result = assembler.feed(event.event, event.data) or result
    assert result is not None
    assert assembler.turn is result
    return result, deltas


def _feed(events: list[dict[str, Any]]) -> tuple[Turn | None, Deltas]:
    deltas: Deltas = []
    assembler = TurnAssembler(lambda field, text: deltas.append((field, text)))
    result: Turn | None = None
    for body in events:
        result = assembler.feed(body["type"], json.dumps(body)) or result
    return result, deltas


def _completed(status: str = "completed", **response: Any) -> dict[str, Any]:
    return {"type": f"response.{status}", "response": {"status": status, **response}}


# --- TurnAssembler: the sim's streams --------------------------------------------------------------------


def test_a_sim_turn_with_reasoning_content_and_calls_assembles_whole() -> None:
    turn = SimTurn(
        reasoning="I should list the files first.",
        content="Listing files now.",
        tool_calls=[
            SimToolCall(name="run_shell", arguments={"command": "ls -la", "timeoutSeconds": 5}),
            SimToolCall(name="finish", raw_arguments='{"status": "success", "summary": "done"}'),
        ],
        chunk_chars=5,
    )
    result, deltas = _run_sim(turn, _usage(prompt=900, completion=44, cached=512))
    assert result.reasoning == "I should list the files first."
    assert result.content == "Listing files now."
    assert [(c.id, c.function.name, c.function.arguments) for c in result.tool_calls] == [
        ("call_1", "run_shell", '{"command":"ls -la","timeoutSeconds":5}'),
        ("call_2", "finish", '{"status": "success", "summary": "done"}'),
    ]
    assert result.usage == Usage(prompt_tokens=900, completion_tokens=44, total_tokens=944, cached_prompt_tokens=512)
    assert result.finish_reason == "tool_calls"
    assert result.model == "sim"  # the model the response says answered
    assert "".join(t for f, t in deltas if f == "reasoning") == turn.reasoning
    assert "".join(t for f, t in deltas if f == "content") == turn.content
    assert [f for f, _ in deltas] == ["reasoning"] * 6 + ["content"] * 4  # in stream order, chunk by chunk


def test_a_sim_turn_without_calls_finishes_with_stop() -> None:
    result, _ = _run_sim(SimTurn(content="All done."))
    assert (result.content, result.reasoning, result.tool_calls, result.finish_reason) == (
        "All done.",
        None,
        [],
        "stop",
    )
    assert result.usage.cached_prompt_tokens == 0


def test_a_sim_turn_cut_at_the_length_limit_finishes_with_length() -> None:
    result, _ = _run_sim(SimTurn(content="partial answ", finish_reason="length"))
    assert result.finish_reason == "length"
    assert result.content == "partial answ"


def test_a_failed_sim_turn_is_a_failed_attempt() -> None:
    with pytest.raises(AttemptFailed, match="simulated model failed"):
        _run_sim(SimTurn(content="x", finish_reason="error"))


_sim_turns = st.builds(
    SimTurn,
    reasoning=st.none() | st.text(min_size=1, max_size=60),
    content=st.none() | st.text(min_size=1, max_size=60),
    tool_calls=st.lists(
        st.builds(
            SimToolCall,
            name=st.sampled_from(["run_shell", "finish", "agent", "context_info"]),
            arguments=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=8), max_size=3),
        ),
        max_size=3,
    ),
    chunk_chars=st.integers(1, 20),
)


@settings(deadline=None, max_examples=150)
@given(turn=_sim_turns, prompt=st.integers(0, 10**6), completion=st.integers(0, 10**5), cached=st.integers(0, 10**6))
def test_any_sim_turn_round_trips_through_the_assembler(
    turn: SimTurn, prompt: int, completion: int, cached: int
) -> None:
    result, deltas = _run_sim(turn, _usage(prompt, completion, cached))
    assert result.content == (turn.content or "")
    assert result.reasoning == turn.reasoning
    assert [c.function.name for c in result.tool_calls] == [c.name for c in turn.tool_calls]
    assert [json.loads(c.function.arguments) for c in result.tool_calls] == [c.arguments for c in turn.tool_calls]
    assert [c.id for c in result.tool_calls] == [f"call_{i + 1}" for i in range(len(turn.tool_calls))]
    assert result.usage == Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
        cached_prompt_tokens=cached,
    )
    assert result.finish_reason == ("tool_calls" if turn.tool_calls else "stop")
    assert "".join(t for f, t in deltas if f == "content") == (turn.content or "")
    assert "".join(t for f, t in deltas if f == "reasoning") == (turn.reasoning or "")
    assert len(deltas) == sum(math.ceil(len(x or "") / turn.chunk_chars) for x in (turn.reasoning, turn.content))


# --- TurnAssembler: hand-made event sequences ------------------------------------------------------------


def test_without_item_done_events_the_deltas_are_the_content() -> None:
    result, deltas = _feed(
        [
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "think"},
            {"type": "response.output_text.delta", "output_index": 1, "delta": "Hel"},
            {"type": "response.output_text.delta", "output_index": 1, "delta": "lo"},
            {
                "type": "response.output_item.added",
                "output_index": 2,
                "item": {"type": "function_call", "call_id": "c9", "name": "finish"},
            },
            {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '{"status":'},
            {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '"success"}'},
            _completed(usage={"input_tokens": 10, "output_tokens": 5}),
        ]
    )
    assert result is not None
    assert (result.content, result.reasoning) == ("Hello", "think")
    assert result.tool_calls == [
        ToolCall(id="c9", function=FunctionCall(name="finish", arguments='{"status":"success"}'))
    ]
    assert result.usage == Usage(prompt_tokens=10, completion_tokens=5, total_tokens=15)
    assert result.usage.cached_prompt_tokens is UNSET
    assert deltas == [("reasoning", "think"), ("content", "Hel"), ("content", "lo")]


def test_the_item_done_text_is_authoritative_over_the_deltas() -> None:
    result, _ = _feed(
        [
            {"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"},
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "item": {"type": "message", "content": [{"type": "output_text", "text": "Hello!"}]},
            },
            {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"a"'},
            {"type": "response.function_call_arguments.done", "output_index": 1, "arguments": '{"a":1}'},
            _completed(),
        ]
    )
    assert result is not None
    assert result.content == "Hello!"
    assert result.tool_calls[0].function.arguments == '{"a":1}'
    assert result.tool_calls[0].id == "call_1"  # no id on the wire: a stable stand-in


@pytest.mark.parametrize(
    ("terminal", "has_call", "expected"),
    [
        (_completed(), False, "stop"),
        (_completed(), True, "tool_calls"),
        (_completed("incomplete", incomplete_details={"reason": "max_output_tokens"}), False, "length"),
        (_completed("incomplete", incomplete_details={"reason": "content_filter"}), False, "content_filter"),
        (_completed("incomplete"), True, "length"),
        ({"type": "response.completed", "response": {}}, False, None),
    ],
)
def test_the_terminal_status_maps_to_a_finish_reason(
    terminal: dict[str, Any], has_call: bool, expected: str | None
) -> None:
    events: list[dict[str, Any]] = [{"type": "response.output_text.delta", "delta": "x"}]
    if has_call:
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {"type": "function_call", "call_id": "c", "name": "n"},
            }
        )
    result, _ = _feed([*events, terminal])
    assert result is not None and result.finish_reason == expected


def test_a_response_without_a_model_name_leaves_it_unknown() -> None:
    assert _feed([_completed()])[0].model is None
    assert _feed([_completed(model="")])[0].model is None
    assert _feed([_completed(model="qwen3-8b-q4")])[0].model == "qwen3-8b-q4"


def test_usage_maps_every_field_including_the_cached_share() -> None:
    usage = {
        "input_tokens": 1000,
        "output_tokens": 20,
        "total_tokens": 1030,
        "input_tokens_details": {"cached_tokens": 800},
    }
    result, _ = _feed([_completed(usage=usage)])
    assert result is not None
    assert result.usage == Usage(prompt_tokens=1000, completion_tokens=20, total_tokens=1030, cached_prompt_tokens=800)
    assert msgspec.to_builtins(result.usage) == {
        "promptTokens": 1000,
        "completionTokens": 20,
        "totalTokens": 1030,
        "cachedPromptTokens": 800,
    }


@pytest.mark.parametrize(
    ("event_type", "data", "message"),
    [
        (
            "response.failed",
            {"type": "response.failed", "response": {"status": "failed", "error": {"message": "boom"}}},
            "boom",
        ),
        ("error", {"type": "error", "message": "overloaded"}, "overloaded"),
        ("error", {"type": "error", "code": "rate_limit"}, "rate_limit"),
    ],
)
def test_a_failure_event_is_a_failed_attempt(event_type: str, data: dict[str, Any], message: str) -> None:
    with pytest.raises(AttemptFailed, match=message) as info:
        TurnAssembler().feed(event_type, json.dumps(data))
    assert info.value.retry


def test_an_unparsable_event_is_a_failed_attempt() -> None:
    with pytest.raises(AttemptFailed, match="unparsable"):
        TurnAssembler().feed("response.output_text.delta", "{not json")


def test_unknown_events_are_ignored() -> None:
    assembler = TurnAssembler()
    assert assembler.feed("response.created", json.dumps({"type": "response.created", "response": {}})) is None
    assert assembler.feed("ping", "") is None
    assert assembler.turn is None


def test_a_deeply_nested_stream_event_is_a_failed_attempt() -> None:
    with pytest.raises(AttemptFailed):
        TurnAssembler().feed("response.output_text.delta", '{"a":' * 5000 + "1" + "}" * 5000)


# --- input_items / build_request ----------------------------------------------------------------------


def _call(call_id: str, name: str = "run_shell", arguments: str = "{}") -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name=name, arguments=arguments))


def _items(history: list[Message]) -> list[dict[str, Any]]:
    return msgspec.to_builtins(input_items(history))


def test_reasoning_goes_before_its_turns_message_and_calls_and_results_follow_in_order() -> None:
    history = [
        Message(role="system", content="sys"),
        Message(role="user", content="task"),
        Message(
            role="assistant",
            content="let me look",
            reasoning="plan",
            tool_calls=[_call("c1"), _call("c2", "finish", '{"a":1}')],
        ),
        Message(role="tool", content="out1", tool_call_id="c1"),
        Message(role="tool", content="out2", tool_call_id="c2"),
        Message(role="user", content="[notice]"),
        Message(role="assistant", content="", tool_calls=[_call("c3")]),
        Message(role="tool", content="out3", tool_call_id="c3"),
    ]
    assert _items(history) == [
        {"type": "message", "role": "system", "content": "sys"},
        {"type": "message", "role": "user", "content": "task"},
        {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "plan"}], "summary": []},
        {"type": "message", "role": "assistant", "content": "let me look"},
        {"type": "function_call", "call_id": "c1", "name": "run_shell", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "finish", "arguments": '{"a":1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "out1"},
        {"type": "function_call_output", "call_id": "c2", "output": "out2"},
        {"type": "message", "role": "user", "content": "[notice]"},
        {"type": "function_call", "call_id": "c3", "name": "run_shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c3", "output": "out3"},
    ]


def test_an_assistant_turn_with_only_reasoning_and_content_has_no_call_items() -> None:
    items = _items([Message(role="assistant", content="done", reasoning="because")])
    assert [i["type"] for i in items] == ["reasoning", "message"]


_messages = st.one_of(
    st.builds(lambda c: Message(role="user", content=c), st.text(max_size=5)),
    st.builds(lambda c: Message(role="system", content=c), st.text(max_size=5)),
    st.builds(
        lambda c, r, n: Message(
            role="assistant", content=c, reasoning=r, tool_calls=[_call(f"c{i}") for i in range(n)]
        ),
        st.text(max_size=5),
        st.none() | st.text(min_size=1, max_size=5),
        st.integers(0, 3),
    ),
    st.builds(
        lambda c, i: Message(role="tool", content=c, tool_call_id=f"c{i}"), st.text(max_size=5), st.integers(0, 3)
    ),
)


def _expected_items(history: list[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m.role == "tool":
            out.append({"type": "function_call_output", "call_id": m.tool_call_id, "output": m.content})
        elif m.role == "assistant":
            if m.reasoning:
                out.append(
                    {"type": "reasoning", "content": [{"type": "reasoning_text", "text": m.reasoning}], "summary": []}
                )
            if m.content:
                out.append({"type": "message", "role": "assistant", "content": m.content})
            out += [
                {"type": "function_call", "call_id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                for c in m.tool_calls
            ]
        else:
            out.append({"type": "message", "role": m.role, "content": m.content})
    return out


@settings(deadline=None, max_examples=200)
@given(history=st.lists(_messages, max_size=12))
def test_input_items_preserve_the_conversation_order(history: list[Message]) -> None:
    assert _items(history) == _expected_items(history)


def test_build_request_streams_and_omits_what_is_unset() -> None:
    tool = FunctionTool(name="finish", description="end", parameters={"type": "object"})
    request = build_request(
        model="sim",
        history=[Message(role="user", content="hi")],
        tools=[tool],
        max_output_tokens=None,
        temperature=math.nan,
    )
    assert msgspec.json.decode(msgspec.json.encode(request)) == {
        "model": "sim",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "tools": [{"type": "function", "name": "finish", "description": "end", "parameters": {"type": "object"}}],
        "stream": True,
    }


def test_build_request_carries_the_generation_settings() -> None:
    request = build_request(model="m", history=[], tools=[], max_output_tokens=4096, temperature=0.2)
    body = msgspec.json.decode(msgspec.json.encode(request))
    assert (body["max_output_tokens"], body["temperature"], body["stream"]) == (4096, 0.2, True)


# --- TurnAssembler: llama-server's ways (issue 13, fixes B and I) ---------------------------------------


def _fc(item_id: str | None, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    item: dict[str, Any] = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    if item_id is not None:
        item["id"] = item_id
    return item


def test_parallel_calls_without_output_index_stay_apart() -> None:
    result, _ = _feed(
        [
            {"type": "response.output_item.added", "item": _fc("fc_a", "call_a", "one")},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_a", "delta": '{"n": 1}'},
            {"type": "response.output_item.added", "item": _fc("fc_b", "call_b", "two")},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_b", "delta": '{"n": 2}'},
            {"type": "response.output_item.done", "item": _fc("fc_a", "call_a", "one", '{\n  "n": 1\n}')},
            {"type": "response.output_item.done", "item": _fc("fc_b", "call_b", "two", '{\n  "n": 2\n}')},
            _completed(),
        ]
    )
    assert result is not None
    assert [(c.id, c.function.name, c.function.arguments) for c in result.tool_calls] == [
        ("call_a", "one", '{\n  "n": 1\n}'),
        ("call_b", "two", '{\n  "n": 2\n}'),
    ]


def test_events_without_any_id_follow_the_order_items_were_added() -> None:
    result, _ = _feed(
        [
            {"type": "response.output_item.added", "item": _fc(None, "call_a", "one")},
            {"type": "response.function_call_arguments.delta", "delta": '{"n":'},
            {"type": "response.function_call_arguments.delta", "delta": " 1}"},
            {"type": "response.output_item.added", "item": _fc(None, "call_b", "two")},
            {"type": "response.function_call_arguments.delta", "delta": '{"n": 2}'},
            {"type": "response.output_item.done", "item": _fc(None, "", "one", '{"n": 1}')},
            {"type": "response.output_item.done", "item": _fc(None, "", "two", '{"n": 2}')},
            _completed(),
        ]
    )
    assert result is not None
    assert [(c.id, c.function.arguments) for c in result.tool_calls] == [("call_a", '{"n": 1}'), ("call_b", '{"n": 2}')]


def test_a_bare_error_frame_fails_the_attempt_with_its_message() -> None:
    assembler = TurnAssembler()
    assembler.feed("response.output_text.delta", json.dumps({"type": "response.output_text.delta", "delta": "x"}))
    with pytest.raises(AttemptFailed, match="endpoint stream error: context shift is disabled"):
        assembler.feed("message", json.dumps({"error": {"code": 500, "message": "context shift is disabled"}}))
