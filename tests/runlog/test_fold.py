"""``fold_request``: a turn's full request rebuilt from ``llm_call`` deltas equals the full snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.conversation import FunctionCall, Message, ToolCall, Usage
from orchestrator.engine import events as ev
from orchestrator.engine.state import RoleFrame
from orchestrator.runlog.fold import fold_request, instance_key
from orchestrator.runlog.writer import apply_level

Record = dict[str, Any]


def _msg(role: str, content: str) -> Record:
    return {"role": role, "content": content}


def _call(
    sent: list[Record] | None, *, role: str = "worker", role_id: str | None = "worker-1-1", **extra: Any
) -> Record:
    payload: Record = {"role": role, "messageCount": extra.pop("message_count", 0), "usage": {}}
    if role_id is not None:
        payload["roleId"] = role_id
    if sent is not None:
        payload["sent"] = sent
    if "sent_from" in extra:
        payload["sentFrom"] = extra.pop("sent_from")
    assert not extra
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": "llm_call", "payload": payload}


def _other(kind: str = "tool_call") -> Record:
    return {"timestamp": "2026-01-01T00:00:00.000Z", "type": kind, "payload": {"role": "worker", "tool": "x"}}


M = [_msg("system", "sys"), _msg("user", "task"), _msg("assistant", "a1"), _msg("tool", "r1"), _msg("user", "n")]


# --- table tests -----------------------------------------------------------------------------------


def test_first_call_is_its_own_full_snapshot() -> None:
    events = [_call(M[:2], sent_from=0)]
    assert fold_request(events, 0) == M[:2]


def test_a_delta_is_prefixed_with_the_earlier_calls_of_the_same_instance() -> None:
    events = [_call(M[:2], sent_from=0), _other(), _call(M[2:4], sent_from=2), _call(M[4:], sent_from=4)]
    assert fold_request(events, 2) == M[:4]
    assert fold_request(events, 3) == M


def test_an_llm_call_without_sent_from_is_a_full_snapshot() -> None:
    events = [_call([_msg("user", "old")], sent_from=0), _call(M[:3])]
    assert fold_request(events, 1) == M[:3]


def test_an_earlier_call_without_sent_from_reads_as_starting_at_zero() -> None:
    events = [_call(M[:2]), _call(M[2:], sent_from=2)]
    assert fold_request(events, 1) == M


def test_an_earlier_call_contributes_only_the_still_uncovered_prefix() -> None:
    # The earlier call logged 4 messages, the later one restarts at index 3: only sent[0:3] is taken.
    replaced = _msg("tool", "r1 (replaced)")
    events = [_call(M[:4], sent_from=0), _call([replaced, M[4]], sent_from=3)]
    assert fold_request(events, 1) == [*M[:3], replaced, M[4]]


def test_instances_sharing_a_role_name_are_kept_apart_by_role_id() -> None:
    parent = [_msg("system", "p"), _msg("user", "parent task")]
    child = [_msg("system", "c"), _msg("user", "child task")]
    events = [
        _call(parent, role_id="worker-1-1", sent_from=0),
        _call(child, role_id="worker-2-2", sent_from=0),
        _call([_msg("tool", "child result")], role_id="worker-2-2", sent_from=2),
        _call([_msg("tool", "parent result")], role_id="worker-1-1", sent_from=2),
    ]
    assert fold_request(events, 2) == [*child, _msg("tool", "child result")]
    assert fold_request(events, 3) == [*parent, _msg("tool", "parent result")]


def test_without_role_id_calls_are_grouped_by_role_name() -> None:
    a = [_msg("system", "a"), _msg("user", "ta")]
    b = [_msg("system", "b"), _msg("user", "tb")]
    events = [
        _call(a, role="planner", role_id=None, sent_from=0),
        _call(b, role="worker", role_id=None, sent_from=0),
        _call([_msg("tool", "ra")], role="planner", role_id=None, sent_from=2),
    ]
    assert instance_key(events[0]["payload"]) == "planner"
    assert fold_request(events, 2) == [*a, _msg("tool", "ra")]


def test_a_standard_level_call_has_no_request_to_fold() -> None:
    events = [_call(M[:2], sent_from=0), _call(None, message_count=4)]
    assert fold_request(events, 1) is None


@pytest.mark.parametrize("kind", ["tool_call", "role_start", "llm_call_start"])
def test_an_event_that_is_not_an_llm_call_folds_to_none(kind: str) -> None:
    events = [_call(M[:2], sent_from=0), _other(kind)]
    assert fold_request(events, 1) is None


def test_a_log_missing_the_early_deltas_yields_the_covered_suffix() -> None:
    events = [_call(M[2:4], sent_from=2)]
    assert fold_request(events, 0) == M[2:4]


# --- the property: fold ≡ snapshot -----------------------------------------------------------------


@dataclass
class _Instance:
    frame: RoleFrame
    snapshots: dict[int, list[Record]] = field(default_factory=dict)


_text = st.text(alphabet="abcxyz ", max_size=6)
_tool_calls = st.lists(
    st.builds(
        lambda i, name, args: ToolCall(id=f"call_{i}", function=FunctionCall(name=name, arguments=args)),
        st.integers(0, 99),
        st.sampled_from(["run_shell", "finish", "agent"]),
        st.sampled_from(["{}", '{"a":1}']),
    ),
    max_size=2,
)
_messages = st.one_of(
    st.builds(lambda c: Message(role="user", content=c), _text),
    st.builds(
        lambda c, r, calls: Message(role="assistant", content=c, reasoning=r, tool_calls=calls),
        _text,
        st.none() | st.text(alphabet="thinking", min_size=1, max_size=6),  # the engine never keeps ""
        _tool_calls,
    ),
    st.builds(lambda c, i: Message(role="tool", content=c, tool_call_id=f"call_{i}"), _text, st.integers(0, 99)),
)

_op = st.one_of(
    st.tuples(st.just("call"), st.integers(0, 3), st.lists(_messages, max_size=4)),
    st.tuples(st.just("drop"), st.integers(0, 3), st.integers(0, 30), st.integers(0, 3)),
    st.tuples(st.just("replace"), st.integers(0, 3), st.integers(0, 30), _text),
    st.tuples(st.just("strip"), st.integers(0, 3)),
    st.tuples(st.just("other"), st.sampled_from(["tool_call", "tool_result", "role_start", "context_pressure"])),
)


def _builtins(message: Message) -> Record:
    """How a conversation message appears in ``sent``: reasoning omitted."""
    return msgspec.to_builtins(msgspec.structs.replace(message, reasoning=None))


def _engine_call(frame: RoleFrame) -> Record:
    """Exactly the engine's bookkeeping in ``Run._model_turn``, through an encode/decode round trip."""
    sent_from = min(frame.logged_upto, len(frame.history))
    assistant = Message(role="assistant", content="reply")
    event = ev.llm_call(frame, frame.history[sent_from:], sent_from, assistant, Usage(prompt_tokens=1), "tool_calls")
    frame.logged_upto = len(frame.history)
    return msgspec.json.decode(msgspec.json.encode(event))


@settings(deadline=None, max_examples=200)
@given(
    names=st.lists(st.sampled_from(["worker", "planner"]), min_size=1, max_size=4),
    ops=st.lists(_op, max_size=40),
)
def test_folding_the_deltas_rebuilds_every_calls_full_request(names: list[str], ops: list[tuple[Any, ...]]) -> None:
    instances = [
        _Instance(
            RoleFrame(
                instance_id=f"{name}-{n}-{n + 1}",
                role=name,
                depth=n,
                task=f"task {n}",
                history=[Message(role="system", content=f"sys {name}"), Message(role="user", content=f"task {n}")],
            )
        )
        for n, name in enumerate(names)
    ]
    events: list[Record] = []
    for op in ops:
        kind = op[0]
        if kind == "other":
            events.append(_other(op[1]))
            continue
        inst = instances[op[1] % len(instances)]
        frame = inst.frame
        if kind == "call":
            frame.history.extend(op[2])
            inst.snapshots[len(events)] = [_builtins(m) for m in frame.history]
            events.append(_engine_call(frame))
            continue
        # A rewrite of the conversation (edit_context drop / replace / strip_reasoning, or a compaction):
        # protected messages stay, and the delta baseline resets so the next call is a full snapshot.
        body = len(frame.history) - 2
        if kind == "drop" and body > 0:
            start = 2 + op[2] % body
            del frame.history[start : start + op[3]]
        elif kind == "replace" and body > 0:
            index = 2 + op[2] % body
            frame.history[index] = msgspec.structs.replace(frame.history[index], content=op[3])
        elif kind == "strip":
            frame.history = [msgspec.structs.replace(m, reasoning=None) for m in frame.history]
        frame.logged_upto = 0

    for inst in instances:
        for index, snapshot in inst.snapshots.items():
            assert fold_request(events, index) == snapshot
            payload = events[index]["payload"]
            assert payload["messageCount"] == len(snapshot)
    for index, event in enumerate(events):
        if event["type"] != "llm_call":
            assert fold_request(events, index) is None


@settings(deadline=None)
@given(messages=st.lists(_messages, min_size=1, max_size=6), logged=st.integers(0, 8))
def test_a_standard_level_llm_call_never_folds(messages: list[Message], logged: int) -> None:
    frame = RoleFrame(instance_id="worker-1-1", role="worker", depth=1, task="t", history=messages, logged_upto=logged)
    sent_from = min(frame.logged_upto, len(frame.history))
    event = ev.llm_call(frame, messages[sent_from:], sent_from, Message(role="assistant"), Usage(), None)
    record = msgspec.json.decode(msgspec.json.encode(apply_level(event, "standard")))
    assert "sent" not in record["payload"] and "sentFrom" not in record["payload"]
    assert record["payload"]["messageCount"] == len(messages)
    assert fold_request([record], 0) is None
