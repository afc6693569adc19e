"""ActiveRun: the default handle routes every operator request to the run's own interrupt queue."""

from __future__ import annotations

from pathlib import Path

from orchestrator.engine.interrupts import OperatorRequest
from orchestrator.service.active import ActiveRun

RUN = "run-20250101-120000"


def _active(tmp_path: Path) -> ActiveRun:
    return ActiveRun(run_id=RUN, run_dir=tmp_path / RUN, item_id="q1", task="build it")


async def test_a_new_active_run_is_idle_and_uncancelled(tmp_path: Path) -> None:
    active = _active(tmp_path)
    assert not active.controls.pending and not active.interrupts.pending
    assert not active.scope.cancel_called and not active.done.is_set()


def test_requests_before_the_engine_hands_over_controls_reach_the_runs_queue(tmp_path: Path) -> None:
    active = _active(tmp_path)
    active.controls.inquire("how far along?")
    active.controls.notify("wrap up")
    assert active.controls.pending and active.interrupts.pending
    assert active.interrupts.take() == OperatorRequest("inquiry", "how far along?")
    assert active.interrupts.take() == OperatorRequest("notice", "wrap up")
    assert active.interrupts.take() is None


def test_an_early_plan_modification_waits_for_the_first_safe_point(tmp_path: Path) -> None:
    active = _active(tmp_path)
    assert active.controls.modify_plan("use sqlite instead") is None  # no role is live yet
    assert active.interrupts.take_early_plan_modification() == "use sqlite instead"
    assert active.interrupts.take_early_plan_modification() is None


async def test_each_active_run_has_its_own_queue_scope_and_event(tmp_path: Path) -> None:
    first, second = _active(tmp_path), _active(tmp_path)
    assert first.interrupts is not second.interrupts and first.scope is not second.scope
    first.controls.inquire("only for the first")
    first.scope.cancel()
    first.done.set()
    assert not second.controls.pending and not second.scope.cancel_called and not second.done.is_set()
