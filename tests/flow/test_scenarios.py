"""The demo harness: thirteen scenarios, frames through the real adapter, manifest, errors."""

from __future__ import annotations

import itertools

import pytest
from tests.flow.fixtures import SCENARIOS
from tests.flow.scenarios import scenario_details, scenario_frame, scenario_manifest

from orchestrator.flow import build_model
from orchestrator.flow.foldstate import epoch

IDS = [s.id for s in SCENARIOS]


def test_thirteen_scenarios_in_harness_order() -> None:
    assert IDS == [
        "single-role",
        "delegation-chain",
        "deep-tree",
        "fresh-instance-retry",
        "pending-question",
        "operator-inquiry",
        "loop-interrupt",
        "nested-interrupt",
        "rewind",
        "three-stacks",
        "multi-terminate-rewind",
        "terminate",
        "error-return",
    ]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_timestamps_increase(scenario) -> None:
    times = [epoch(e["timestamp"]) for e in scenario.events]
    assert all(a is not None and b is not None and a < b for a, b in itertools.pairwise(times))


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_frames_are_the_adapter_over_each_prefix(scenario) -> None:
    last = len(scenario.events) - 1
    for n in range(last):
        now = scenario.events[n]["timestamp"]
        assert scenario_frame(scenario.id, n) == build_model(scenario.events[: n + 1], meta_status="running", now=now)
    final = scenario_frame(scenario.id, last)
    running = build_model(scenario.events, meta_status="running", now=scenario.events[-1]["timestamp"])
    assert final.status == scenario.terminal
    assert final.operations == running.operations  # derived as running, then stamped terminal
    assert final.operations[-1].lifecycle == "in_flight"  # the final return still travels


def _structure(model) -> tuple:
    """Everything but the clock-driven elapsed seconds."""
    operations = [
        (op.kind, op.stack, op.source, op.destination, op.settled_at, op.outcome, op.metrics and op.metrics.tokens)
        for op in model.operations
    ]
    return model.participants, operations, model.stacks, model.active_stack, model.active_participant


@pytest.mark.parametrize("scenario", SCENARIOS, ids=IDS)
def test_every_frame_changes_the_model(scenario) -> None:
    frames = [_structure(scenario_frame(scenario.id, n)) for n in range(len(scenario.events))]
    for n in range(1, len(frames)):
        assert frames[n - 1] != frames[n], f"frame {n} repeats frame {n - 1}"


def test_manifest_lists_frame_counts_and_final_participants() -> None:
    manifest = scenario_manifest()
    assert [m.id for m in manifest] == IDS
    for entry, scenario in zip(manifest, SCENARIOS, strict=True):
        assert entry.label == scenario.label and entry.frame_count == len(scenario.events)
        assert entry.participants == scenario_frame(scenario.id, entry.frame_count - 1).participants


def test_scenarios_cover_their_features() -> None:
    final = {s.id: scenario_frame(s.id, len(s.events) - 1) for s in SCENARIOS}
    kinds = {i: {op.kind for op in m.operations} for i, m in final.items()}
    roots = {i: [s.root for s in m.stacks] for i, m in final.items()}
    assert "human:answerer:1" in {p.id for p in final["pending-question"].participants}
    assert roots["operator-inquiry"] == ["human:root", "human:asker:1"] and "observe" in kinds["operator-inquiry"]
    assert len(roots["nested-interrupt"]) == 3 and len(roots["three-stacks"]) == 3
    assert roots["three-stacks"][2] == "human:asker:1"
    assert {"terminate"} <= kinds["rewind"] and {"terminate"} <= kinds["terminate"]
    assert sum(op.kind == "terminate" for op in final["multi-terminate-rewind"].operations) == 2
    assert "role:coder:2" in {p.id for p in final["fresh-instance-retry"].participants}
    assert final["error-return"].status == "error"
    assert any(op.outcome == "error" for op in final["error-return"].operations)


def test_detail_bodies_per_frame() -> None:
    assert scenario_details("operator-inquiry", 7, "op-5") == "What is the coder doing right now?"
    assert scenario_details("single-role", 0, "op-1") == "Summarise what this repository does."
    with pytest.raises(KeyError):
        scenario_details("single-role", 0, "op-2")  # exists only in later frames


@pytest.mark.parametrize(
    ("scenario", "frame", "error"),
    [("nope", 0, KeyError), ("single-role", 6, IndexError), ("single-role", -1, IndexError)],
)
def test_unknown_scenario_or_frame(scenario: str, frame: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        scenario_frame(scenario, frame)
