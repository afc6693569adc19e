"""Context arithmetic and the naive backstop (``engine/context.py``): budgets, turn groups, truncation and
``compact``. (``apply_edits`` is in ``test_context_edits.py``.)"""

from __future__ import annotations

import math
from collections.abc import Sequence

import msgspec
import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from orchestrator.conversation import FunctionCall, Message, ToolCall
from orchestrator.engine.context import (
    CHARS_PER_TOKEN,
    COMPACTION_TARGET,
    MESSAGE_TOKENS,
    TEMPLATE_TOKENS,
    TOOL_CHARS_PER_TOKEN,
    Compaction,
    PromptEstimate,
    compact,
    effective_budget,
    message_chars,
    truncate_text,
    turn_groups,
)

# --- builders ----------------------------------------------------------------------------------------


def _assistant(content: str, *call_ids: str, reasoning: str | None = None) -> Message:
    calls = [ToolCall(id=i, function=FunctionCall(name="run_shell", arguments="{}")) for i in call_ids]
    return Message(role="assistant", content=content, reasoning=reasoning, tool_calls=calls)


def _tool(call_id: str, content: str) -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id)


def _preamble(n: int = 2) -> list[Message]:
    head = [Message(role="system", content="S" * 40)]
    if n == 3:
        head.append(Message(role="system", content="E" * 40))
    return [*head, Message(role="user", content="T" * 40)]


def _chars(history: Sequence[Message]) -> int:
    return sum(message_chars(m) for m in history)


# --- effective_budget, message_chars, truncate_text ------------------------------------------------


@pytest.mark.parametrize(
    ("window", "max_tokens", "ceiling", "expected"),
    [
        (8192, 1024, None, 7168),
        (8192, 1024, 5000, 5000),
        (8192, 1024, 9000, 7168),
        (8192, 8192, None, 1),
        (8192, 9000, 100, 1),
        (8192, 0, 0, 1),
    ],
)
def test_effective_budget_is_the_window_minus_the_reservation_capped_by_the_learned_ceiling(
    window: int, max_tokens: int, ceiling: int | None, expected: int
) -> None:
    assert effective_budget(window, max_tokens, ceiling) == expected


def test_message_chars_counts_content_reasoning_and_call_arguments() -> None:
    message = Message(
        role="assistant",
        content="abc",
        reasoning="12345",
        tool_calls=[ToolCall(id="c1", function=FunctionCall(name="run_shell", arguments='{"x":1}'))],
    )
    assert message_chars(message) == 3 + 5 + len("run_shell") + len('{"x":1}')


def test_truncate_text_leaves_a_short_text_alone() -> None:
    assert truncate_text("hello", 5) == "hello"


def test_truncate_text_keeps_the_head_and_says_how_much_was_cut() -> None:
    assert truncate_text("abcd" + "x" * 96, 4) == "abcd\n[truncated: 96 chars removed]"


def test_truncating_a_text_never_makes_it_longer() -> None:
    text = "x" * 125
    assert len(truncate_text(text, 120)) <= len(text)


# --- turn_groups --------------------------------------------------------------------------------------


def test_turn_groups_keep_each_call_with_its_results() -> None:
    history = [
        *_preamble(),
        _assistant("a", "c1", "c2"),
        _tool("c1", "r1"),
        _tool("c2", "r2"),
        Message(role="user", content="notice"),
        _assistant("b", "c3"),
        _tool("c3", "r3"),
        _assistant("done"),
    ]
    assert turn_groups(history, 2) == [range(2, 5), range(5, 6), range(6, 8), range(8, 9)]


def test_turn_groups_start_after_the_preamble() -> None:
    history = [*_preamble(3), _assistant("a", "c1"), _tool("c1", "r")]
    assert turn_groups(history, 3) == [range(3, 5)]
    assert turn_groups(history[:3], 3) == []


# --- compact: tables -----------------------------------------------------------------------------------


def _turns(n: int, tool_chars: int = 2000) -> list[Message]:
    out: list[Message] = []
    for i in range(n):
        out += [_assistant(f"turn {i} " + "a" * 300, f"c{i}", reasoning=f"why {i} " + "r" * 100)]
        out += [_tool(f"c{i}", f"result {i} " + "t" * tool_chars)]
    return out


def test_a_history_under_the_target_comes_back_whole() -> None:
    history = [*_preamble(), *_turns(2, 100)]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=100_000, max_tokens=1000)
    assert result is not None
    assert result.history == history
    assert (result.dropped_messages, result.truncated_tool_messages, result.stripped_reasoning_messages) == (0, 0, 0)
    expected = TEMPLATE_TOKENS + MESSAGE_TOKENS * len(history) + math.ceil(_chars(history) / CHARS_PER_TOKEN)
    assert result.estimated_prompt_tokens == expected


def test_the_oldest_turns_go_first_and_the_preamble_stays() -> None:
    history = [*_preamble(), *_turns(10, 400)]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=1500, max_tokens=200)
    assert result is not None
    assert result.history[:2] == history[:2]
    assert result.dropped_messages > 0
    assert result.history[2:] == history[2 + result.dropped_messages :]
    assert result.estimated_prompt_tokens <= COMPACTION_TARGET * 1500


def test_the_reported_prompt_size_calibrates_the_estimate() -> None:
    history = [*_preamble(), *_turns(4, 400)]
    chars = _chars(history)
    # The endpoint says the request was twice what 4 chars/token suggests: half the text must go.
    reported = 2 * math.ceil(chars / CHARS_PER_TOKEN)
    window = math.ceil(chars / CHARS_PER_TOKEN)
    result = compact(history, preamble=2, reported_prompt_tokens=reported, context_window=window, max_tokens=10)
    assert result is not None
    overhead = TEMPLATE_TOKENS + MESSAGE_TOKENS * len(history)
    rate = (reported - overhead) / chars
    kept = result.history
    assert result.estimated_prompt_tokens == TEMPLATE_TOKENS + MESSAGE_TOKENS * len(kept) + math.ceil(
        _chars(kept) * rate
    )
    assert result.estimated_prompt_tokens <= window - 10


def test_tool_schemas_and_the_template_count_in_the_estimate() -> None:
    """Fix F: the case from issue 13 (the old rule said 417 where llama-server counted 902)."""
    history = [*_preamble(), Message(role="user", content="x" * (417 * 4 - 80))]
    old_rule = math.ceil(_chars(history) / CHARS_PER_TOKEN)
    assert old_rule == 417
    estimate = PromptEstimate.calibrated(history, tools_chars=1026, reported=None).tokens(history)
    assert estimate == 417 + TEMPLATE_TOKENS + 3 * MESSAGE_TOKENS + math.ceil(1026 / TOOL_CHARS_PER_TOKEN)
    assert 0.9 * 902 <= estimate <= 1.1 * 902


def test_a_report_below_the_assumed_overhead_falls_back_to_a_plain_rate() -> None:
    history = [*_preamble(), Message(role="user", content="y" * 4000)]
    estimate = PromptEstimate.calibrated(history, tools_chars=3000, reported=500)
    assert (estimate.fixed, estimate.per_message) == (0, 0)
    assert estimate.tokens(history) == 500


def test_a_single_oversized_turn_has_its_tool_results_truncated() -> None:
    history = [*_preamble(), _assistant("run it", "c1"), _tool("c1", "x" * 40_000)]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=4000, max_tokens=500)
    assert result is not None
    assert result.dropped_messages == 0
    assert result.truncated_tool_messages == 1
    assert result.history[-1].content.startswith("x" * 120)
    assert "[truncated: " in result.history[-1].content


def test_the_last_turns_reasoning_survives_while_older_turns_are_dropped() -> None:
    big = "r" * 3000
    history = [
        *_preamble(),
        _assistant("a", "c1", reasoning=big),
        _tool("c1", "1"),
        _assistant("b", "c2", reasoning=big),
        _tool("c2", "2"),
        _assistant("c", "c3", reasoning=big),
        _tool("c3", "3" * 5000),
    ]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=2000, max_tokens=100)
    assert result is not None
    assert result.dropped_messages == 4
    assert result.history[2].reasoning == big
    assert result.stripped_reasoning_messages == 0
    assert result.truncated_tool_messages == 1


def test_none_when_even_the_preamble_and_the_last_turn_cannot_fit() -> None:
    history = [Message(role="system", content="S" * 8000), Message(role="user", content="T"), _assistant("a", "c1")]
    history.append(_tool("c1", "r"))
    assert compact(history, preamble=2, reported_prompt_tokens=None, context_window=2000, max_tokens=100) is None


def test_a_tool_result_cut_twice_by_the_backstop_reports_everything_removed() -> None:
    history = [*_preamble(), _assistant("a", "c1"), _tool("c1", "x" * 20_000)]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=600, max_tokens=60)
    assert result is not None
    content = result.history[-1].content
    kept = content.split("\n[truncated: ")[0]
    assert content.endswith(f"[truncated: {20_000 - len(kept)} chars removed]")


def test_compaction_fits_when_the_completion_reservation_exceeds_thirty_percent_of_the_window() -> None:
    history = [*_preamble(), *_turns(20, 2000)]
    result = compact(history, preamble=2, reported_prompt_tokens=None, context_window=8192, max_tokens=4096)
    assert result is not None
    assert result.estimated_prompt_tokens <= 8192 - 4096


# --- compact: the property ------------------------------------------------------------------------------


@st.composite
def _histories(draw: st.DrawFn) -> tuple[list[Message], int]:
    preamble = draw(st.integers(2, 3))
    history = _preamble(preamble)
    size = st.integers(0, 3000)
    calls = 0
    for turn in range(draw(st.integers(0, 10))):
        if draw(st.integers(0, 4)) == 0:
            history.append(Message(role="user", content=f"[notice {turn}]" + "n" * draw(st.integers(0, 300))))
            continue
        ids = [f"call_{calls + j}" for j in range(draw(st.integers(0, 3)))]
        calls += len(ids)
        reasoning = draw(st.none() | size.map(lambda n, t=turn: f"<why {t}>" + "r" * n))
        history.append(_assistant(f"<turn {turn}>" + "a" * draw(size), *ids, reasoning=reasoning))
        history += [_tool(i, f"<{i}>" + "t" * draw(size)) for i in ids]
    return history, preamble


def _rate(history: Sequence[Message], reported: int | None) -> tuple[int, int, float]:
    """The oracle's (fixed, per message, tokens per char) for a history sent without tools."""
    chars = max(1, _chars(history))
    if not reported:
        return TEMPLATE_TOKENS, MESSAGE_TOKENS, 1 / CHARS_PER_TOKEN
    variable = reported - TEMPLATE_TOKENS - MESSAGE_TOKENS * len(history)
    if variable * 16 >= chars:
        return TEMPLATE_TOKENS, MESSAGE_TOKENS, variable / chars
    return 0, 0, reported / chars


def _oracle(history: Sequence[Message], reported: int | None, chars: int, messages: int) -> int:
    fixed, per_message, rate = _rate(history, reported)
    return fixed + per_message * messages + math.ceil(chars * rate)


def _check_pairs(history: Sequence[Message], start: int) -> None:
    """Every tool result follows its own call's assistant, and every kept call has its result."""
    open_ids: set[str] = set()
    assistant: Message | None = None
    for message in history[start:]:
        if message.role == "tool":
            assert assistant is not None, "a tool result lost its call"
            assert message.tool_call_id in {c.id for c in assistant.tool_calls}
            assert message.tool_call_id in open_ids, "a tool result is duplicated or misplaced"
            open_ids.discard(message.tool_call_id)
            continue
        assert not open_ids, f"calls {open_ids} lost their results"
        assistant = message if message.role == "assistant" else None
        open_ids = {c.id for c in message.tool_calls}
    assert not open_ids, f"calls {open_ids} lost their results"


_CAPS = (2000, 500, 120)


def _truncations(text: str) -> list[str]:
    """The cuts the backstop may make to a tool result: the original cut at 2000, 500 or 120 chars."""
    return [text] + [truncate_text(text, cap) for cap in _CAPS]


def _is_shortened(original: Message, kept: Message) -> bool:
    if original.role != "tool":
        return kept.content == original.content
    return kept.content in _truncations(original.content)


def _check_result(
    history: list[Message], preamble: int, result: Compaction, reported: int | None, window: int, max_tokens: int
) -> None:
    kept = result.history
    # (a) the preamble is identical
    assert kept[:preamble] == history[:preamble]
    # (b) calls and results stay together
    _check_pairs(kept, preamble)
    # drops are whole, oldest groups: the body is a suffix of the original's body, message for message
    body = kept[preamble:]
    tail = history[len(history) - len(body) :]
    assert result.dropped_messages == len(history) - len(kept)
    for original, message in zip(tail, body, strict=True):
        assert (message.role, message.tool_call_id, message.tool_calls) == (
            original.role,
            original.tool_call_id,
            original.tool_calls,
        )
        assert _is_shortened(original, message)
        assert message.reasoning in (original.reasoning, None)
    # (c) the most recent turn group is kept
    groups = turn_groups(history, preamble)
    if groups:
        assert len(body) >= len(groups[-1])
    # (d) the last assistant message keeps its reasoning
    last = max((i for i, m in enumerate(body) if m.role == "assistant"), default=None)
    if last is not None:
        assert body[last].reasoning == tail[last].reasoning
    # the counters say what happened
    assert result.truncated_tool_messages == sum(a.content != b.content for a, b in zip(tail, body, strict=True))
    assert result.stripped_reasoning_messages == sum(
        a.reasoning is not None and b.reasoning is None for a, b in zip(tail, body, strict=True)
    )
    # (e) the estimate fits the window minus the completion reservation
    estimate = _oracle(history, reported, _chars(kept), len(kept))
    assert result.estimated_prompt_tokens == estimate
    assert estimate <= window - max_tokens


def _least_possible(history: list[Message], preamble: int, reported: int | None) -> int:
    """Preamble + the last turn group, every tool result cut as far as the backstop can, no reasoning
    but the last assistant's: what must fit for the backstop to have any answer."""
    groups = turn_groups(history, preamble)
    rest = [history[i] for i in groups[-1]] if groups else []
    chars = _chars(history[:preamble])
    last = max((i for i, m in enumerate(rest) if m.role == "assistant"), default=None)
    for i, message in enumerate(rest):
        chars += message_chars(message)
        if message.role == "tool":
            chars -= len(message.content) - min(len(message.content), len(_truncations(message.content)[-1]))
        if message.reasoning and i != last:
            chars -= len(message.reasoning)
    return _oracle(history, reported, chars, preamble + len(rest))


_reported = st.none() | st.integers(1, 60_000)


@settings(deadline=None, max_examples=300)
@given(case=_histories(), reported=_reported, window=st.integers(200, 40_000), reserve=st.floats(0.0, 0.95))
def test_a_compaction_keeps_the_preamble_the_pairs_the_last_turn_and_fits(
    case: tuple[list[Message], int], reported: int | None, window: int, reserve: float
) -> None:
    history, preamble = case
    max_tokens = int(window * reserve)
    before = [msgspec.structs.replace(m) for m in history]
    result = compact(
        history, preamble=preamble, reported_prompt_tokens=reported, context_window=window, max_tokens=max_tokens
    )
    assert history == before, "compact must not mutate its input"
    if result is not None:
        _check_result(history, preamble, result, reported, window, max_tokens)


@settings(deadline=None, max_examples=300)
@given(case=_histories(), reported=_reported, window=st.integers(200, 40_000), reserve=st.floats(0.0, 0.3))
@example(
    case=([*_preamble(), _assistant("a", "c1"), _tool("c1", "x" * 20_000)], 2), reported=None, window=600, reserve=0.1
)
def test_compaction_gives_up_only_when_the_preamble_and_last_turn_cannot_fit(
    case: tuple[list[Message], int], reported: int | None, window: int, reserve: float
) -> None:
    # Within the configurations where the 70 % target lies inside the window minus the reservation (see the
    # xfail above for the others).
    history, preamble = case
    max_tokens = int(window * reserve)
    result = compact(
        history, preamble=preamble, reported_prompt_tokens=reported, context_window=window, max_tokens=max_tokens
    )
    event(
        "gave up"
        if result is None
        else f"dropped={result.dropped_messages > 0} cut={result.truncated_tool_messages > 0}"
    )
    if result is None:
        assert _least_possible(history, preamble, reported) > window - max_tokens
    else:
        _check_result(history, preamble, result, reported, window, max_tokens)
