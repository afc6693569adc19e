"""``RunControls``: each operator request reaches the run's queue or its live plan modification."""

from __future__ import annotations

from orchestrator.engine.controls import PlanChange, RunControls
from orchestrator.engine.interrupts import InterruptQueue, OperatorRequest
from orchestrator.engine.state import RoleFrame


def _frame() -> RoleFrame:
    return RoleFrame(instance_id="lead-0-1", role="lead", depth=0, task="t")


def test_inquiries_and_notices_wait_in_the_queue_in_order() -> None:
    queue = InterruptQueue()
    controls = RunControls(queue)
    assert not controls.pending
    controls.inquire("status?")
    controls.notify("wrap up")
    assert controls.pending
    assert queue.take() == OperatorRequest("inquiry", "status?")
    assert queue.take() == OperatorRequest("notice", "wrap up")
    assert not controls.pending


def test_a_plan_modification_before_the_run_exists_waits_for_the_first_safe_point() -> None:
    queue = InterruptQueue()
    assert RunControls(queue).modify_plan("new plan") is None
    assert queue.pending and queue.take_early_plan_modification() == "new plan"


def test_a_live_run_applies_the_plan_modification_at_once() -> None:
    queue = InterruptQueue()
    change: PlanChange = (_frame(), ["coder-1-2"])
    applied: list[str] = []

    def apply(message: str) -> PlanChange | None:
        applied.append(message)
        return change

    assert RunControls(queue, apply).modify_plan("re-plan") == change
    assert applied == ["re-plan"] and not queue.pending


def test_a_run_with_no_live_role_keeps_the_plan_modification_for_later() -> None:
    queue = InterruptQueue()
    assert RunControls(queue, lambda _message: None).modify_plan("re-plan") is None
    assert queue.take_early_plan_modification() == "re-plan"
