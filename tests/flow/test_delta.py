"""``flow/delta.py``: a ``?since=`` delta, merged into the answer the client holds, is exactly the full
answer of the same state (any log, any cut, any window, any status); a cursor that does not fit gets the
full answer; a live run's delta between events carries only its live operations."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.flow.logs import at, log, random_logs, start, tcall, tresult

from orchestrator.flow import FlowState, finalize, fold
from orchestrator.flow.delta import cursor_of, flow_answer, parse_cursor

GEN = "g1"
CURSOR_FIELDS = ("cursor", "delta", "since", "participantPositions", "livePositions", "windowStart")


def _answer(state: FlowState, status: str | None, now: str, since: str | None, window: int | None) -> dict[str, Any]:
    return flow_answer(state, finalize(state, status, now, window=window), GEN, since)


def _plain(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k not in CURSOR_FIELDS}


def _merge(
    held: dict[str, Any], positions: dict[str, int], delta: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, int]]:
    """The web client's merge (``web/static/flowdelta.js``), as the wire contract states it."""
    assert delta["delta"] is True and delta["since"] == held["cursor"]
    by_position = {int(op["id"][3:]) - 1: op for op in held["operations"]}
    by_position.update({int(op["id"][3:]) - 1: op for op in delta["operations"]})
    start_at, total = delta["windowStart"], delta["operationsTotal"]
    order = [p for p in delta["livePositions"] if p < start_at] + list(range(start_at, total))
    operations = [by_position[p] for p in order]
    people = {p["id"]: p for p in held["participants"]}
    where = dict(positions)
    for p, at_ in zip(delta["participants"], delta["participantPositions"], strict=True):
        people[p["id"]] = p
        where[p["id"]] = at_
    chosen = list(people.values())
    if delta["operationsOmitted"] > 0:
        keep = {"human:root", *(s["root"] for s in delta["stacks"])}
        keep |= {op["source"] for op in operations} | {op["destination"] for op in operations}
        chosen = [p for p in chosen if p["id"] in keep]
    chosen.sort(key=lambda p: where[p["id"]])
    merged = {**delta, "operations": operations, "participants": chosen}
    return merged, {p["id"]: where[p["id"]] for p in chosen}


@settings(max_examples=150, deadline=None)
@given(
    random_logs,
    st.lists(st.integers(0, 40), min_size=1, max_size=5),
    st.sampled_from([None, 3, 8]),
    st.sampled_from(["running", "success", None]),
)
def test_a_merged_delta_is_the_full_answer(
    events: list[dict[str, Any]], cuts: list[int], window: int | None, status: str | None
) -> None:
    state = FlowState()
    folded = 0
    held: dict[str, Any] | None = None
    positions: dict[str, int] = {}
    for step, cut in enumerate([*sorted(cuts), len(events)]):
        for event in events[folded:cut]:
            fold(state, event)
        folded = max(folded, cut)
        now = at(100 + step)  # a later "now": live operations' elapsed times move, frozen ones do not
        full = _answer(state, status, now, "", window)
        assert full["delta"] is False and full["cursor"] == cursor_of(state, GEN)
        if held is not None:
            delta = _answer(state, status, now, held["cursor"], window)
            merged, positions = _merge(held, positions, delta)
            assert _plain(merged) == _plain(full)
            assert positions == dict(
                zip((p["id"] for p in full["participants"]), full["participantPositions"], strict=True)
            )
            held = merged
        else:
            held = full
            positions = dict(zip((p["id"] for p in full["participants"]), full["participantPositions"], strict=True))


def test_between_events_a_live_run_sends_only_its_live_operations() -> None:
    entries = [start("lead")]
    for _ in range(200):
        entries += [tcall("lead", "read_file"), tresult("lead", "read_file")]
    entries += [start("coder", depth=1), tcall("coder", "run_shell")]
    state = FlowState()
    for event in log(*entries):
        fold(state, event)
    first = _answer(state, "running", at(1000), "", None)
    later = _answer(state, "running", at(1001), first["cursor"], None)
    assert later["delta"] is True and later["cursor"] == first["cursor"]
    assert {op["lifecycle"] for op in later["operations"]} <= {"in_flight", "settled"}
    assert [op["id"] for op in later["operations"]] == sorted(
        (f"op-{p + 1}" for p in state.live), key=lambda i: int(i[3:])
    )
    assert len(later["operations"]) == 3  # the lead's call, the coder's call, the open run_shell call
    assert {p["id"] for p in later["participants"]} == {"role:lead:1", "role:coder:1", "tool:run_shell:1", "human:root"}
    assert len(str(later)) < len(str(first)) / 20


def test_a_cursor_that_does_not_fit_gets_the_full_answer() -> None:
    state = FlowState()
    for event in log(start("lead"), tcall("lead", "read_file"), tresult("lead", "read_file")):
        fold(state, event)
    good = cursor_of(state, GEN)
    assert parse_cursor(good, state, GEN) == (3, 3, 3)
    ahead = f"{GEN}.9.3.3"
    for bad in ("", None, "x", f"other.{good.split('.', 1)[1]}", ahead, f"{GEN}.1.-1.0", f"{GEN}.1.2", f"{GEN}.a.b.c"):
        assert parse_cursor(bad, state, GEN) is None
        assert _answer(state, "running", at(50), bad, None)["delta"] is False
