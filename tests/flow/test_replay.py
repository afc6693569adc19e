"""``flow/replay.py``: one-pass replay frames agree with ``build_model`` over the log's prefixes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.flow.fixtures import SCENARIOS
from tests.flow.logs import at, done, log, random_logs, start, tcall, tresult, usage

from orchestrator.flow import FlowState, InteractionModel, build_model, finalize, fold
from orchestrator.flow.calltree import TreeState, fold_tree, totals
from orchestrator.flow.replay import MAX_FRAMES, REPLAY_TAIL, ReplayPass, replay_frames

WHOLE = 1_000_000  # a tail no test log reaches: frames are whole models


def _prefix_models(events: list[dict[str, Any]], meta: str | None, now: str) -> list[InteractionModel]:
    """The reference: ``build_model`` over the prefix ending at the event that created each operation,
    at that event's time, running — and the whole log, with the real status, for the last one."""
    expected: list[InteractionModel] = []
    made = 0
    for n in range(1, len(events) + 1):
        model = build_model(events[:n], meta_status="running", now=events[n - 1]["timestamp"])
        expected.extend([model] * (len(model.operations) - made))
        made = len(model.operations)
    if expected:
        expected[-1] = build_model(events, meta_status=meta, now=now)
    return expected


def _untotalled(frames: list[InteractionModel]) -> list[InteractionModel]:
    return [msgspec.structs.replace(frame, totals=[]) for frame in frames]


@settings(max_examples=150, deadline=None)
@given(random_logs, st.sampled_from(["running", "success", "error", None]))
def test_every_frame_is_build_model_over_the_prefix_that_created_its_operation(
    events: list[dict[str, Any]], meta: str | None
) -> None:
    now = at(999)
    frames = replay_frames(events, first=1, count=len(events) + 1, meta_status=meta, now=now, tail=WHOLE)
    assert _untotalled(frames) == _prefix_models(events, meta, now)
    for n, frame in enumerate(frames, start=1):
        assert frame.operations_total == n
        assert frame.operations[-1].id == f"op-{n}" or n == len(frames)


@settings(max_examples=100, deadline=None)
@given(random_logs, st.integers(1, 12), st.integers(0, 12), st.integers(1, 6))
def test_a_range_is_the_slice_of_the_whole_replay_and_windows_like_flow(
    events: list[dict[str, Any]], first: int, count: int, tail: int
) -> None:
    whole = replay_frames(events, first=1, count=len(events) + 1, meta_status="success", now=at(999), tail=tail)
    part = replay_frames(events, first=first, count=count, meta_status="success", now=at(999), tail=tail)
    assert part == whole[first - 1 : first - 1 + count]
    if whole:  # the last frame is the live model, windowed the same way
        state = FlowState()
        for event in events:
            fold(state, event)
        assert _untotalled(whole[-1:]) == [finalize(state, "success", at(999), window=tail)]


@settings(max_examples=100, deadline=None)
@given(random_logs, st.lists(st.integers(1, 5), min_size=1, max_size=12), st.integers(1, 4))
def test_a_continued_pass_gives_the_frames_of_a_fresh_one(
    events: list[dict[str, Any]], counts: list[int], tail: int
) -> None:
    whole = replay_frames(events, first=1, count=len(events) + 1, meta_status="error", now=at(999), tail=tail)
    kept, first = ReplayPass(), 1
    for count in counts:
        assert kept.can_start(first)
        part = kept.frames(events[kept.events :], first=first, count=count, meta_status="error", now=at(999), tail=tail)
        assert part == whole[first - 1 : first - 1 + count]
        first += count


def test_a_pass_does_not_go_back() -> None:
    events = log(start("o"), tcall("o", "t"), usage("o", 1), tresult("o", "t"), tcall("o", "t"), usage("o", 1))
    kept = ReplayPass()
    assert len(kept.frames(events, first=1, count=2, meta_status="running", now=at(9))) == 2
    assert (kept.seen, kept.exact) == (3, True) and not kept.can_start(2) and kept.can_start(3)
    assert len(kept.frames(events[kept.events :], first=3, count=9, meta_status="running", now=at(9))) == 2
    assert (kept.seen, kept.exact) == (4, False)  # an event after op 4's own was folded
    assert not kept.can_start(4) and kept.can_start(5)
    with pytest.raises(ValueError, match="bad range"):
        kept.frames([], first=1, count=1, meta_status=None, now=at(9))


def test_frames_carry_the_totals_of_the_run_so_far() -> None:
    events = log(start("o"), tcall("o", "t"), tresult("o", "t"), usage("o", 5), tcall("o", "t"), done("o"))
    frames = replay_frames(events, first=1, count=10, meta_status="success", now=at(10))
    assert len(frames) == 5
    counted = [{t.key: t.count for t in frame.totals}.get("tool:t", 0) for frame in frames]
    assert counted == [0, 1, 1, 2, 2]
    tree = TreeState()
    for event in events:
        fold_tree(tree, event)
    assert frames[-1].totals == totals(tree)


def test_small_tails_keep_live_operations_and_stay_small() -> None:
    events = log(start("o"), *[e for _ in range(30) for e in (tcall("o", "t"), tresult("o", "t"))], done("o"))
    frames = replay_frames(events, first=40, count=2, meta_status="running", now=at(100), tail=4)
    assert [f.operations_total for f in frames] == [40, 41]
    for frame in frames:
        ids = [op.id for op in frame.operations]
        assert ids[0] == "op-1"  # the orchestrator's open call stays, so its chain is drawable
        assert len(ids) == 5 and frame.operations_omitted == frame.operations_total - 5


def test_the_pass_stops_one_operation_past_the_range() -> None:
    events = log(start("o"), *[e for _ in range(50) for e in (tcall("o", "t"), usage("o", 1), tresult("o", "t"))])
    read = 0

    def counted() -> Iterator[dict[str, Any]]:
        nonlocal read
        for event in events:
            read += 1
            yield event

    frames = replay_frames(counted(), first=3, count=2, meta_status="success", now=at(999))
    assert [f.operations_total for f in frames] == [3, 4]
    assert read == 7  # op 5 (the seventh event) proves op 4 is not the run's last, and ends the pass
    assert [f.status for f in frames] == ["running", "running"]


def test_the_last_frame_of_each_scenario_is_its_final_model() -> None:
    for scenario in SCENARIOS:
        frames = replay_frames(scenario.events, first=1, count=MAX_FRAMES, meta_status=scenario.terminal, now=at(999))
        state = FlowState()
        for event in scenario.events:
            fold(state, event)
        final = finalize(state, scenario.terminal, at(999), window=REPLAY_TAIL)
        assert len(frames) == final.operations_total, scenario.id
        assert frames[-1].status == scenario.terminal
        assert _untotalled(frames[-1:]) == [final], scenario.id


def test_past_the_end_and_empty_ranges_give_no_frames() -> None:
    events = log(start("o"), done("o"))
    assert replay_frames(events, first=3, count=5, meta_status="success", now=at(5)) == []
    assert replay_frames(events, first=1, count=0, meta_status="success", now=at(5)) == []
    assert replay_frames([], first=1, count=5, meta_status=None, now=at(5)) == []


@pytest.mark.parametrize(("first", "count", "tail"), [(0, 1, 1), (1, -1, 1), (1, 1, 0)])
def test_a_bad_range_is_refused(first: int, count: int, tail: int) -> None:
    with pytest.raises(ValueError, match="bad range"):
        replay_frames([], first=first, count=count, meta_status=None, now=at(0), tail=tail)
