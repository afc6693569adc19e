"""Scenario frames for tests: manifest and per-frame models, through the production adapter.

Frame ``N`` of a scenario is the adapter's model over its events ``0..N`` with ``now`` = event ``N``'s
time and the run ``running``. The last frame is derived the same way (a real run writes its terminal
meta only after the final ``role_finished``, so the final return is still in flight) and then stamped
with the scenario's terminal status.
"""

from __future__ import annotations

from typing import Any

import msgspec
from tests.flow.fixtures import SCENARIOS, Scenario

from orchestrator.flow.adapter import finalize, fold
from orchestrator.flow.details import operation_details
from orchestrator.flow.foldstate import FlowState
from orchestrator.flow.model import InteractionModel, Participant

__all__ = ["ScenarioSummary", "scenario_details", "scenario_frame", "scenario_manifest"]

_BY_ID: dict[str, Scenario] = {scenario.id: scenario for scenario in SCENARIOS}


class ScenarioSummary(msgspec.Struct, kw_only=True, rename="camel", frozen=True):
    """One manifest entry: ``{id, label, frameCount, participants}``."""

    id: str
    label: str
    frame_count: int
    participants: list[Participant]


def _scenario(scenario_id: str) -> Scenario:
    """The scenario named ``scenario_id``; ``KeyError`` when there is none."""
    return _BY_ID[scenario_id]


def _folded(scenario: Scenario, frame: int) -> tuple[FlowState, list[dict[str, Any]]]:
    if isinstance(frame, bool) or not 0 <= frame < len(scenario.events):
        raise IndexError(f"scenario {scenario.id!r} has no frame {frame}")
    events = scenario.events[: frame + 1]
    state = FlowState()
    for event in events:
        fold(state, event)
    return state, events


def scenario_frame(scenario_id: str, frame: int) -> InteractionModel:
    """Frame ``frame`` of a scenario; ``KeyError`` for an unknown scenario, ``IndexError`` when out of range."""
    scenario = _scenario(scenario_id)
    state, events = _folded(scenario, frame)
    model = finalize(state, "running", events[-1]["timestamp"])
    if frame == len(scenario.events) - 1:
        model = msgspec.structs.replace(model, status=scenario.terminal)
    return model


def scenario_details(scenario_id: str, frame: int, operation_id: str) -> str | None:
    """An operation's detail body as of ``frame``; ``KeyError`` also for an id not in that frame."""
    state, events = _folded(_scenario(scenario_id), frame)
    return operation_details(events, state, operation_id)


def scenario_manifest() -> list[ScenarioSummary]:
    """Every scenario in harness order; participants come from its final frame."""
    return [
        ScenarioSummary(
            id=scenario.id,
            label=scenario.label,
            frame_count=len(scenario.events),
            participants=scenario_frame(scenario.id, len(scenario.events) - 1).participants,
        )
        for scenario in SCENARIOS
    ]
