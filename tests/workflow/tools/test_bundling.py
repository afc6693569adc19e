"""``tools/bundling.py``: the bundle budget, eager-bundling gates, the decision order and enforcement notes."""

from __future__ import annotations

import msgspec
from tests.workflow.tools.builders import LOOPED, activity

from orchestrator.workflow.corpus import Condition, FlatStep
from orchestrator.workflow.tools import bundling as bd


def test_bundle_budget() -> None:
    assert bd.bundle_budget(200_000, 0.8, 4) == 640_000
    assert bd.bundle_budget(1, 0.8, 4) == 3


def test_gates() -> None:
    bag = {"flag": True, "mode": "quick", "n": 3, "nothing": None}
    assert bd.gate_of(None, None, bag, set()) == bd.Gate(True)
    assert bd.gate_of("flag && n > 2", None, bag, set()) == bd.Gate(True)
    assert bd.gate_of("mode != quick", None, bag, set()) == bd.Gate(False)
    assert bd.gate_of("flag &&", None, bag, set()) == bd.Gate(None, "unparsed")
    assert bd.gate_of("a && b || c", None, bag, set()) == bd.Gate(None, "unparsed")
    assert bd.gate_of("missing == 1", None, bag, set()) == bd.Gate(None, "unbound")
    assert bd.gate_of("flag", None, bag, {"flag"}) == bd.Gate(None, "pending")
    assert bd.gate_of("flag.deep == 1", None, bag, {"flag"}) == bd.Gate(None, "pending")
    exists = msgspec.convert({"type": "simple", "variable": "missing", "operator": "notExists"}, Condition)
    assert bd.gate_of(None, exists, bag, set()) == bd.Gate(True)  # presence tests answer on absence
    equal = msgspec.convert({"type": "simple", "variable": "n", "operator": "==", "value": 3}, Condition)
    assert bd.gate_of("flag", equal, bag, set()) == bd.Gate(True)
    assert bd.gate_of("mode == deep", equal, bag, set()) == bd.Gate(False)
    assert bd.combine_gates(bd.Gate(None, "unbound"), bd.Gate(False)) == bd.Gate(False)
    assert bd.combine_gates(bd.Gate(None, "unbound"), bd.Gate(None, "pending")).reason == "unbound"
    assert bd.combine_gates(bd.Gate(True), bd.Gate(None, "pending")).reason == "pending"


def test_written_variables_and_step_gates() -> None:
    act = activity(LOOPED)
    written = bd.written_variables(act, lambda step: ("out", "extra") if step.id == "first" else ())
    assert written == {"result", "extra", "item", "flag", "picked", "reply"}
    flats = {f.step.id: f for f in act.flattened_steps()}
    assert bd.step_gate(flats["first"], {}, written) == bd.Gate(True)
    assert bd.step_gate(flats["inner"], {"go": True}, written) == bd.Gate(True)
    assert bd.step_gate(flats["inner"], {"go": False}, written) == bd.Gate(False)
    assert bd.step_gate(flats["inner"], {}, written) == bd.Gate(None, "unbound")
    assert bd.step_gate(flats["gated"], {"go": True}, written) == bd.Gate(None, "pending")
    assert bd.step_gate(FlatStep(flats["gated"].step, ()), {"go": False}, set()) == bd.Gate(None, "unbound")


def test_bundle_decision_order() -> None:
    assert bd.bundle_decision(500, max_chars=400, held=True, tally=0, budget=10_000) == "skip"
    assert bd.bundle_decision(500, max_chars=None, held=True, tally=99_999, budget=10) == "held"
    assert bd.bundle_decision(500, max_chars=None, held=False, tally=9_600, budget=10_000) == "stop"
    assert bd.bundle_decision(500, max_chars=500, held=False, tally=9_500, budget=10_000) == "add"


def test_enforcement_notes_and_marker() -> None:
    assert set(bd.enforcement_notes(activity(LOOPED))) == {"actions", "auto_advance"}
    assert bd.enforcement_notes(activity([{"kind": "technique", "id": "t", "technique": "x"}])) == {}
    assert set(bd.enforcement_notes(activity([{"kind": "action", "id": "a", "actions": []}]))) == {"actions"}
    assert bd.step_marker("detect", "review-mode-detection") == "▼ STEP detect · technique review-mode-detection"
