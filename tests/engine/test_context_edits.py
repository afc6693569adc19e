"""``apply_edits`` (``engine/context.py``): the ``edit_context`` ops — half-open ranges, the protected
preamble, all or nothing, calls never split from their results. (The builtin's bookkeeping is in
``test_builtins.py``.)"""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.conversation import FunctionCall, Message, ToolCall
from orchestrator.engine.context import EditError, apply_edits


def _plain(n: int) -> list[Message]:
    """``n`` messages without tool calls: system, task, then alternating assistant/user with reasoning."""
    out = [Message(role="system", content="m0"), Message(role="user", content="m1")]
    for i in range(2, n):
        role = "assistant" if i % 2 == 0 else "user"
        out.append(Message(role=role, content=f"m{i}", reasoning=f"r{i}" if role == "assistant" else None))
    return out[:n]


def _call(call_id: str) -> ToolCall:
    return ToolCall(id=call_id, function=FunctionCall(name="run_shell", arguments="{}"))


def _paired() -> list[Message]:
    return [
        Message(role="system", content="sys"),
        Message(role="user", content="task"),
        Message(role="assistant", content="a", tool_calls=[_call("c1"), _call("c2")]),
        Message(role="tool", content="r1", tool_call_id="c1"),
        Message(role="tool", content="r2", tool_call_id="c2"),
        Message(role="user", content="notice"),
        Message(role="assistant", content="b", reasoning="why", tool_calls=[_call("c3")]),
        Message(role="tool", content="r3", tool_call_id="c3"),
    ]


# --- apply_edits: tables ------------------------------------------------------------------------------


def test_drop_is_half_open() -> None:
    history = _plain(6)
    result = apply_edits(history, [{"op": "drop", "range": [2, 4]}], protected=2)
    assert [m.content for m in result] == ["m0", "m1", "m4", "m5"]


def test_an_empty_range_drops_nothing() -> None:
    history = _plain(5)
    assert apply_edits(history, [{"op": "drop", "range": [3, 3]}], protected=2) == history


def test_strip_reasoning_clears_only_the_range() -> None:
    history = _plain(7)
    result = apply_edits(history, [{"op": "strip_reasoning", "range": [2, 5]}], protected=2)
    assert [m.reasoning for m in result] == [None, None, None, None, None, None, "r6"]
    assert [m.content for m in result] == [m.content for m in history]


def test_replace_changes_only_the_content() -> None:
    history = _plain(5)
    result = apply_edits(history, [{"op": "replace", "index": 2, "content": "short"}], protected=2)
    assert result[2] == msgspec.structs.replace(history[2], content="short")
    assert result[:2] == history[:2] and result[3:] == history[3:]


def test_ops_apply_in_order_each_on_the_previous_result() -> None:
    history = _plain(6)
    ops = [{"op": "drop", "range": [2, 3]}, {"op": "replace", "index": 2, "content": "was m3"}]
    assert [m.content for m in apply_edits(history, ops, protected=2)] == ["m0", "m1", "was m3", "m4", "m5"]


def test_whole_number_floats_are_accepted_as_range_bounds() -> None:
    assert len(apply_edits(_plain(6), [{"op": "drop", "range": [2.0, 4.0]}], protected=2)) == 4


@pytest.mark.parametrize(
    ("op", "message"),
    [
        ({"op": "drop", "range": [0, 3]}, "protected"),
        ({"op": "drop", "range": [1, 2]}, "protected"),
        ({"op": "strip_reasoning", "range": [1, 4]}, "protected"),
        ({"op": "replace", "index": 0, "content": "x"}, "protected"),
        ({"op": "replace", "index": 1, "content": "x"}, "protected"),
        ({"op": "drop", "range": [4, 2]}, "start <= end"),
        ({"op": "drop", "range": [-1, 2]}, "non-negative"),
        ({"op": "drop", "range": [2.5, 4]}, "whole numbers"),
        ({"op": "drop", "range": [2, 99]}, "runs past"),
        ({"op": "drop", "range": [2]}, "[start, end)"),
        ({"op": "drop"}, "[start, end)"),
        ({"op": "replace", "index": 2}, "needs `index` and `content`"),
        ({"op": "replace", "index": 6, "content": "x"}, "outside the conversation"),
        ({"op": "replace", "index": -1, "content": "x"}, "outside the conversation"),
        ({"op": "squash", "range": [2, 3]}, "unknown op"),
        ({"op": "drop", "range": [2, 3], "extra": 1}, "invalid operation"),
        ("drop 2..3", "invalid operation"),
    ],
)
def test_a_bad_operation_is_rejected_naming_the_problem(op: Any, message: str) -> None:
    history = _plain(6)
    with pytest.raises(EditError, match=re.escape(message)):
        apply_edits(history, [op], protected=2)


def test_a_bigger_protected_preamble_is_honoured() -> None:
    with pytest.raises(EditError, match=r"messages 0\.\.2 are protected"):
        apply_edits(_plain(6), [{"op": "drop", "range": [2, 4]}], protected=3)


def test_a_failing_op_late_in_a_batch_applies_nothing() -> None:
    history = _plain(8)
    before = copy.deepcopy(history)
    ops = [
        {"op": "drop", "range": [2, 4]},
        {"op": "strip_reasoning", "range": [2, 4]},
        {"op": "replace", "index": 1, "content": "hijacked task"},
    ]
    with pytest.raises(EditError):
        apply_edits(history, ops, protected=2)
    assert history == before


@pytest.mark.parametrize(
    ("drop", "problem"),
    [
        ([2, 3], "without its call"),  # the call goes, its results stay
        ([3, 4], "separate a tool call"),  # one of two results goes
        ([4, 5], "separate a tool call"),
        ([7, 8], "without its result"),  # the last call loses its result
        ([6, 7], "without its call"),
    ],
)
def test_a_drop_that_would_split_a_call_from_its_results_is_rejected(drop: list[int], problem: str) -> None:
    with pytest.raises(EditError, match=problem):
        apply_edits(_paired(), [{"op": "drop", "range": drop}], protected=2)


def test_a_drop_of_a_whole_call_group_is_accepted() -> None:
    result = apply_edits(_paired(), [{"op": "drop", "range": [2, 6]}], protected=2)
    assert [m.content for m in result] == ["sys", "task", "b", "r3"]


# --- apply_edits: properties --------------------------------------------------------------------------

_op = st.one_of(
    st.fixed_dictionaries(
        {
            "op": st.sampled_from(["drop", "strip_reasoning"]),
            "range": st.tuples(st.integers(0, 9), st.integers(0, 9)).map(list),
        }
    ),
    st.fixed_dictionaries({"op": st.just("replace"), "index": st.integers(-1, 9), "content": st.text(max_size=3)}),
)


def _model(history: list[Message], ops: list[dict[str, Any]], protected: int) -> list[Message] | None:
    """A straightforward reading of the seed: ``None`` when the batch must be rejected."""
    result = list(history)
    for op in ops:
        if op["op"] == "replace":
            index = op["index"]
            if not 0 <= index < len(result) or index < protected:
                return None
            result[index] = msgspec.structs.replace(result[index], content=op["content"])
            continue
        start, end = op["range"]
        if start > end or end > len(result) or (start < protected and end > start):
            return None
        if op["op"] == "drop":
            del result[start:end]
        else:
            for i in range(start, end):
                result[i] = msgspec.structs.replace(result[i], reasoning=None)
    return result


@settings(deadline=None, max_examples=300)
@given(size=st.integers(2, 9), protected=st.integers(2, 3), ops=st.lists(_op, min_size=1, max_size=4))
def test_a_batch_applies_entirely_or_not_at_all_and_never_touches_the_preamble(
    size: int, protected: int, ops: list[dict[str, Any]]
) -> None:
    history = _plain(size)
    before = copy.deepcopy(history)
    expected = _model(history, ops, protected)
    if expected is None:
        with pytest.raises(EditError):
            apply_edits(history, ops, protected=protected)
    else:
        result = apply_edits(history, ops, protected=protected)
        assert result == expected
        assert result[:protected] == before[:protected]
    assert history == before


@settings(deadline=None, max_examples=300)
@given(ops=st.lists(_op, min_size=1, max_size=3))
def test_a_successful_batch_never_leaves_a_call_without_its_results(ops: list[dict[str, Any]]) -> None:
    history = _paired()
    before = copy.deepcopy(history)
    try:
        result = apply_edits(history, ops, protected=2)
    except EditError:
        assert history == before
        return
    assert result[:2] == before[:2]
    open_ids: set[str] = set()
    for message in result[2:]:
        if message.role == "tool":
            assert message.tool_call_id in open_ids
            open_ids.discard(message.tool_call_id)
        else:
            assert not open_ids
            open_ids = {c.id for c in message.tool_calls}
    assert not open_ids
