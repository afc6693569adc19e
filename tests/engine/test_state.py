"""A run's resumable state as data: defaults, the wire shape, and msgspec JSON round trips."""

from __future__ import annotations

import msgspec
import pytest

from orchestrator.conversation import CardError, FunctionCall, Message, ResultCard, ToolCall
from orchestrator.engine.state import FinishedRoot, PendingTurn, Rejection, RoleFrame, RunState


def _frame(**overrides: object) -> RoleFrame:
    fields: dict[str, object] = {"instance_id": "lead-1", "role": "lead", "depth": 0, "task": "do it"}
    fields.update(overrides)
    return RoleFrame(**fields)  # type: ignore[arg-type]


def _busy_frame() -> RoleFrame:
    call = ToolCall(id="c1", function=FunctionCall(name="agent", arguments='{"role": "coder"}'))
    assistant = Message(role="assistant", content="", reasoning="think", tool_calls=[call])
    return _frame(
        instance_id="coder-2",
        role="coder",
        depth=1,
        parent_id="lead-1",
        parent_role="lead",
        history=[Message(role="system", content="sys"), Message(role="user", content="task")],
        tool_calls=3,
        last_prompt_tokens=1200,
        parked_rejection=Rejection(prompt_tokens=9000, message="too long"),
        compaction_sizes=[10, 7],
        inbox=[Message(role="user", content="operator says hi")],
        pending=PendingTurn(
            assistant=assistant,
            results=[Message(role="tool", content="ok", tool_call_id="c0")],
            awaiting=1,
            child_id="tester-3",
            child_card=ResultCard(status="success", summary="done", artifacts=["a.txt"]),
            cut_off=True,
        ),
    )


def test_a_fresh_frame_has_the_documented_defaults() -> None:
    frame = _frame()
    assert frame.preamble == 2
    assert frame.history == [] and frame.inbox == [] and frame.compaction_sizes == []
    assert frame.parent_id is None and frame.pending is None and frame.parked_rejection is None
    assert (frame.tool_calls, frame.llm_calls, frame.logged_upto, frame.history_epoch) == (0, 0, 0, 0)
    assert not frame.pressure_fired and not frame.pressure_notice_due


def test_list_defaults_are_not_shared_between_instances() -> None:
    first, second = _frame(), _frame()
    first.history.append(Message(role="user", content="x"))
    first.inbox.append(Message(role="user", content="y"))
    assert second.history == [] and second.inbox == []


def test_a_fresh_run_state_has_the_documented_defaults() -> None:
    state = RunState(run_id="r1", started_at="2026-01-01T00:00:00Z")
    assert (state.log_level, state.effort) == ("full", "standard")
    assert state.frames == [] and state.final is None and state.park_question is None
    assert state.registry_counter == 0 and state.learned_ceiling is None and not state.write_started


def test_defaults_are_omitted_and_names_are_camel_case_on_the_wire() -> None:
    wire = msgspec.json.decode(msgspec.json.encode(_frame(parent_role="lead", tool_calls=2)))
    assert wire == {
        "instanceId": "lead-1",
        "role": "lead",
        "depth": 0,
        "task": "do it",
        "parentRole": "lead",
        "toolCalls": 2,
    }


def test_a_minimal_run_state_encodes_only_its_required_fields() -> None:
    state = RunState(run_id="r1", started_at="t0")
    assert msgspec.json.decode(msgspec.json.encode(state)) == {"runId": "r1", "startedAt": "t0"}


def test_a_frame_with_a_pending_turn_round_trips() -> None:
    frame = _busy_frame()
    assert msgspec.json.decode(msgspec.json.encode(frame), type=RoleFrame) == frame


def test_a_full_run_state_round_trips() -> None:
    card = ResultCard(status="error", summary="broke", error=CardError(kind="tool_error", message="boom"))
    state = RunState(
        run_id="r1",
        started_at="t0",
        log_level="standard",
        effort="thorough",
        registry_counter=4,
        learned_ceiling=8192,
        frames=[_frame(), _busy_frame()],
        final=FinishedRoot(role="lead", role_id="lead-1", card=card),
        write_started=True,
        park_question="which branch?",
    )
    decoded = msgspec.json.decode(msgspec.json.encode(state), type=RunState)
    assert decoded == state
    assert decoded.frames[1].pending is not None and decoded.frames[1].pending.awaiting == 1


def test_unknown_keys_are_ignored_when_decoding() -> None:
    frame = b'{"instanceId": "a", "role": "r", "depth": 0, "task": "t", "extra": true}'
    raw = b'{"runId": "r1", "startedAt": "t0", "futureField": 1, "frames": [' + frame + b"]}"
    state = msgspec.json.decode(raw, type=RunState)
    assert state.frames == [RoleFrame(instance_id="a", role="r", depth=0, task="t")]


def test_a_missing_required_field_names_its_path() -> None:
    raw = b'{"runId": "r1", "startedAt": "t0", "frames": [{"instanceId": "a", "role": "r", "task": "t"}]}'
    with pytest.raises(msgspec.ValidationError, match=r"`depth`.*\$\.frames\[0\]"):
        msgspec.json.decode(raw, type=RunState)
