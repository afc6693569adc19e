"""Status mapping, finalization (in flight while active, settled when terminal), metrics, wire shape."""

from __future__ import annotations

import msgspec
import pytest
from tests.flow.logs import at, done, log, start, tcall, tresult, usage

from orchestrator.flow import FlowState, build_model, finalize, fold, run_status


@pytest.mark.parametrize(
    ("meta", "status"),
    [
        ("running", "running"),
        ("success", "success"),
        ("error", "error"),
        ("needs_clarification", "needs_clarification"),
        ("interrupted", "interrupted"),
        ("cancelled", "cancelled"),
        (None, "unknown"),
        ("", "unknown"),
        ("done", "unknown"),
        ("unknown", "unknown"),
    ],
)
def test_status_mapping(meta: str | None, status: str) -> None:
    assert run_status(meta) == status
    assert build_model([], meta_status=meta, now=at(0)).status == status


OPEN_CALL = log(start("orchestrator"))
LINGERING = log(start("orchestrator"), tcall("orchestrator", "t"), tresult("orchestrator", "t"))


@pytest.mark.parametrize("meta", ["running", "needs_clarification", None, "garbage"])
def test_open_work_stays_in_flight_while_the_run_is_active(meta: str | None) -> None:
    call = build_model(OPEN_CALL, meta_status=meta, now=at(30)).operations[0]
    assert (call.lifecycle, call.settled_at) == ("in_flight", None)
    assert call.metrics is not None and call.metrics.elapsed_seconds == 30
    ret = build_model(LINGERING, meta_status=meta, now=at(30)).operations[-1]
    assert (ret.lifecycle, ret.settled_at) == ("in_flight", None)


@pytest.mark.parametrize("meta", ["success", "error", "interrupted", "cancelled"])
def test_a_terminal_run_settles_open_calls_at_now_and_returns_at_their_own_time(meta: str) -> None:
    call = build_model(OPEN_CALL, meta_status=meta, now=at(30)).operations[0]
    assert (call.lifecycle, call.settled_at) == ("settled", at(30))
    ret = build_model(LINGERING, meta_status=meta, now=at(30)).operations[-1]
    assert (ret.lifecycle, ret.settled_at) == ("settled", at(2))
    model = build_model(LINGERING, meta_status=meta, now=at(30))
    assert all(op.lifecycle == "settled" for op in model.operations)


def test_elapsed_runs_to_the_return_or_now_and_rounds_half_up() -> None:
    events = [
        {"timestamp": "2026-03-01T12:00:00.000Z", "type": "role_start", "payload": {"role": "o"}},
        {"timestamp": "2026-03-01T12:00:01.000Z", "type": "role_start", "payload": {"role": "c"}},
        {"timestamp": "2026-03-01T12:00:03.500Z", "type": "role_finished", "payload": {"role": "c"}},
    ]
    model = build_model(events, meta_status="running", now="2026-03-01T12:00:10.400Z")
    outer, inner = (op.metrics for op in model.operations[:2])
    assert outer is not None and outer.elapsed_seconds == 10
    assert inner is not None and inner.elapsed_seconds == 3  # 2.5 s rounds half up
    assert (outer.elapsed_ms, inner.elapsed_ms) == (10_400, 2_500)  # the same intervals to the millisecond
    unparsable = build_model(events, meta_status="running", now="not a time").operations[0].metrics
    assert unparsable is not None and unparsable.elapsed_seconds is None and unparsable.elapsed_ms is None


def test_elapsed_never_goes_negative() -> None:
    model = build_model(OPEN_CALL, meta_status="running", now="2020-01-01T00:00:00Z")
    assert model.operations[0].metrics.elapsed_seconds == 0  # type: ignore[union-attr]
    assert model.operations[0].metrics.elapsed_ms == 0  # type: ignore[union-attr]


def test_finalize_does_not_change_the_state() -> None:
    state = FlowState()
    for event in [*LINGERING, *log(usage("orchestrator", total=3))]:
        fold(state, event)
    first = finalize(state, "running", at(9))
    finalize(state, "success", at(99))
    assert finalize(state, "running", at(9)) == first


def test_frozen_operations_are_shared_between_polls() -> None:
    state = FlowState()
    for event in [*LINGERING, *log(done("orchestrator"))]:
        fold(state, event)
    a, b = finalize(state, "running", at(5)), finalize(state, "running", at(6))
    assert a.operations[1] is b.operations[1]  # the tool call froze at its return
    assert len(state.live) == 1  # only the final, lingering return is rebuilt


def test_wire_shape_is_camel_case_with_explicit_nulls() -> None:
    model = build_model(LINGERING, meta_status="running", now=at(5))
    wire = msgspec.json.decode(msgspec.json.encode(model))
    assert set(wire) == {
        "participants",
        "operations",
        "status",
        "stacks",
        "activeStack",
        "activeParticipant",
        "operationsTotal",
        "operationsOmitted",
        "participantsOmitted",
        "totals",  # filled by the run index (whole-run type totals); empty from build_model
    }
    assert (wire["operationsTotal"], wire["operationsOmitted"]) == (len(wire["operations"]), 0)
    assert wire["participants"][0] == {"id": "human:root", "role": "human", "kind": "human", "instanceId": None}
    assert wire["participants"][1]["instanceId"] == "orchestrator-0-1"
    assert wire["operations"][0] == {
        "id": "op-1",
        "kind": "call",
        "stack": "main",
        "source": "human:root",
        "destination": "role:orchestrator:1",
        "startedAt": at(0),
        "settledAt": at(1),
        "lifecycle": "settled",
        "outcome": None,
        "metrics": {"tokens": 0, "cachedPromptTokens": 0, "elapsedSeconds": 5, "elapsedMs": 5000},
        "severity": None,
        "note": None,
        "subject": "t",  # the delegation's task (flow/subject.py)
    }
    ret = wire["operations"][-1]
    assert ret["settledAt"] is None and ret["metrics"] is None and ret["outcome"] == "success"
    assert ret["severity"] is None and ret["note"] is None and ret["subject"] is None
    assert wire["stacks"] == [{"id": "main", "root": "human:root"}]


def _long_run(tool_calls: int) -> list[dict]:
    """A coder under the orchestrator making ``tool_calls`` tool calls, still running."""
    entries = [start("orchestrator"), start("coder", depth=1)]
    for _ in range(tool_calls):
        entries += [tcall("coder", "read_file"), tresult("coder", "read_file")]
    return log(*entries)


def test_a_window_larger_than_the_run_is_the_whole_model() -> None:
    events = _long_run(5)
    assert finalize(_folded(events), "running", at(99), window=1000) == build_model(
        events, meta_status="running", now=at(99)
    )


def test_a_windowed_model_keeps_the_newest_operations_and_every_live_one_in_order() -> None:
    events = _long_run(50)
    whole = build_model(events, meta_status="running", now=at(99))
    windowed = finalize(_folded(events), "running", at(99), window=10)
    kept = [op.id for op in windowed.operations]
    # the two open role calls (op-1, op-2) are still live, so they stay ahead of the newest ten
    assert kept == ["op-1", "op-2"] + [op.id for op in whole.operations[-10:]]
    assert windowed.operations[2:] == whole.operations[-10:]
    assert windowed.operations_total == whole.operations_total == len(whole.operations)
    assert windowed.operations_omitted == len(whole.operations) - len(windowed.operations) > 0
    # the invariant is the whole run's, and every participant an operation names is present
    assert (windowed.active_stack, windowed.active_participant) == (whole.active_stack, whole.active_participant)
    present = {p.id for p in windowed.participants}
    assert {o.source for o in windowed.operations} | {o.destination for o in windowed.operations} <= present
    assert windowed.participants[0].id == "human:root"
    assert windowed.participants_omitted == len(whole.participants) - len(windowed.participants) > 0
    order = [p.id for p in whole.participants]
    assert [p.id for p in windowed.participants] == [i for i in order if i in present]


def _folded(events: list[dict]) -> FlowState:
    state = FlowState()
    for event in events:
        fold(state, event)
    return state
