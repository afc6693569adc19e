"""Pure turn selection, token estimation, usage resolution and chunking."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.sim import parse_script
from orchestrator.sim.matching import (
    SimRequest,
    decode_request,
    estimate_completion_tokens,
    estimate_prompt_tokens,
    exceeds_context,
    item_text,
    last_input_text,
    matches,
    resolve_usage,
    select_turn,
)
from orchestrator.sim.script import Expect, Turn, Usage
from orchestrator.sim.sseframes import chunks


def _req(**doc: Any) -> SimRequest:
    return decode_request(json.dumps(doc).encode())


CONVERSATION = _req(
    model="sim",
    instructions="Be terse.",
    input=[
        {"type": "message", "role": "system", "content": "You are the planner."},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev note"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "plan the trip"}]},
        {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "thinking"}], "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "agent", "arguments": '{"role":"scout"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "scout says hi"},
    ],
    tools=[
        {"type": "function", "name": "agent", "description": "d", "parameters": {}},
        {"type": "function", "name": "finish", "description": "d", "parameters": {}},
    ],
)


def test_item_texts() -> None:
    texts = [item_text(item) for item in CONVERSATION.items()]
    assert texts == [
        "You are the planner.",
        "dev note",
        "plan the trip",
        "thinking",
        '{"role":"scout"}',
        "scout says hi",
    ]
    assert last_input_text(CONVERSATION) == "scout says hi"
    assert last_input_text(_req(input="bare string")) == "bare string"
    assert last_input_text(_req(input=[])) == ""


def test_system_contains_reads_system_developer_and_instructions() -> None:
    for needle in ("planner", "dev note", "terse"):
        assert matches(Expect(system_contains=needle), CONVERSATION)
    assert not matches(Expect(system_contains="plan the trip"), CONVERSATION)


def test_last_input_contains_reads_output_arguments_and_messages() -> None:
    assert matches(Expect(last_input_contains="scout says"), CONVERSATION)
    assert not matches(Expect(last_input_contains="plan the trip"), CONVERSATION)
    call_last = _req(input=[{"type": "function_call", "call_id": "c", "name": "n", "arguments": '{"x":1}'}])
    assert matches(Expect(last_input_contains='"x":1'), call_last)
    user_last = _req(input=[{"type": "message", "role": "user", "content": "go now"}])
    assert matches(Expect(last_input_contains="go"), user_last)


def test_input_contains_reads_every_item() -> None:
    for needle in ("planner", "plan the trip", "thinking", "scout", "says hi"):
        assert matches(Expect(input_contains=needle), CONVERSATION)
    assert not matches(Expect(input_contains="Be terse"), CONVERSATION)  # instructions are not input items


def test_tools_include_needs_every_name() -> None:
    assert matches(Expect(tools_include=["agent"]), CONVERSATION)
    assert matches(Expect(tools_include=["agent", "finish"]), CONVERSATION)
    assert not matches(Expect(tools_include=["agent", "run_shell"]), CONVERSATION)
    assert matches(Expect(tools_include=[]), CONVERSATION)


def test_all_conditions_must_hold() -> None:
    assert matches(None, CONVERSATION)
    assert matches(Expect(), CONVERSATION)
    assert matches(
        Expect(system_contains="planner", last_input_contains="scout", tools_include=["agent"]), CONVERSATION
    )
    assert not matches(Expect(system_contains="planner", last_input_contains="nope"), CONVERSATION)


def test_select_turn_takes_the_first_unconsumed_match() -> None:
    turns = [
        Turn(expect=Expect(system_contains="writer"), content="w"),
        Turn(content="a"),
        Turn(content="b"),
    ]
    assert select_turn(turns, [False, False, False], CONVERSATION) == 1
    assert select_turn(turns, [False, True, False], CONVERSATION) == 2
    assert select_turn(turns, [False, True, True], CONVERSATION) is None


def test_prompt_estimate_counts_items_instructions_and_tools() -> None:
    chars = sum(len(item_text(i)) for i in CONVERSATION.items()) + len("Be terse.")
    chars += len(msgspec.json.encode(CONVERSATION.tools))
    assert estimate_prompt_tokens(CONVERSATION, 4) == math.ceil(chars / 4)
    assert estimate_prompt_tokens(CONVERSATION, 1) == chars
    assert estimate_prompt_tokens(_req(input="abcde"), 4) == 2
    assert estimate_prompt_tokens(_req(input=[]), 4) == 0


def test_context_rule_is_prompt_at_or_over_window_minus_max_output() -> None:
    req = _req(input="x", max_output_tokens=100)
    assert exceeds_context(900, req, 1000)
    assert not exceeds_context(899, req, 1000)
    assert exceeds_context(1000, _req(input="x"), 1000)
    assert not exceeds_context(999, _req(input="x"), 1000)


def test_default_and_partial_usage() -> None:
    script = parse_script(b"{}")
    turn = Turn(reasoning="r" * 9, content="c" * 10, tool_calls=[], usage=None)
    assert estimate_completion_tokens(turn, 4) == 5
    usage = resolve_usage(turn, 42, script)
    assert (usage.prompt_tokens, usage.completion_tokens, usage.cached_prompt_tokens, usage.reasoning_tokens) == (
        42,
        5,
        0,
        3,
    )
    partial = resolve_usage(msgspec.structs.replace(turn, usage=Usage(cached_prompt_tokens=7)), 42, script)
    assert (partial.prompt_tokens, partial.completion_tokens, partial.cached_prompt_tokens) == (42, 5, 7)
    given_ = resolve_usage(msgspec.structs.replace(turn, usage=Usage(prompt_tokens=1, completion_tokens=2)), 42, script)
    assert (given_.prompt_tokens, given_.completion_tokens, given_.cached_prompt_tokens) == (1, 2, 0)
    assert given_.reasoning_tokens == 2  # capped at the completion tokens


def test_completion_estimate_counts_call_arguments() -> None:
    script = parse_script(
        json.dumps(
            {"turns": [{"toolCalls": [{"name": "a", "arguments": {"k": "v"}}, {"name": "b", "rawArguments": "{x"}]}]}
        )
    )
    # '{"k":"v"}' is 9 chars, '{x' is 2.
    assert estimate_completion_tokens(script.turns[0], 1) == 11


@given(st.text(max_size=200), st.integers(min_value=1, max_value=40))
def test_chunks_cover_the_text(text: str, size: int) -> None:
    pieces = chunks(text, size)
    assert "".join(pieces) == text
    assert len(pieces) == math.ceil(len(text) / size)
    assert all(len(p) == size for p in pieces[:-1])
