"""The operator requests a host may make of one live run, and nothing else: the ``RunControls`` handle.

``execute_prepared`` / ``resume_run`` hand it up with ``task_status.started(controls)`` (trio's
``nursery.start`` pattern) once the run's role tree exists, so a host (the service) routes operator
requests without ever holding the ``Run``. Stopping a run is not a request here: the host cancels the
scope it runs the run in (the run stays resumable from its last checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable

from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.state import RoleFrame

__all__ = ["PlanApplier", "PlanChange", "RunControls"]

#: What an applied plan modification did: the plan owner that re-plans, and the instance ids it stopped.
PlanChange = tuple[RoleFrame, list[str]]
#: Applies a plan modification at once; ``None`` when no role is live to take it yet.
PlanApplier = Callable[[str], PlanChange | None]


class RunControls:
    """Post operator requests to one run. Posting never blocks; requests the run cannot take now wait
    in its ``InterruptQueue`` for the next safe point (in memory only: a restart loses them)."""

    def __init__(self, interrupts: InterruptQueue, apply_plan: PlanApplier | None = None) -> None:
        """``apply_plan``: the live run's immediate plan modification; ``None`` before the run exists
        (every plan modification then waits for the first safe point)."""
        self._interrupts = interrupts
        self._apply_plan = apply_plan

    def inquire(self, message: str) -> None:
        """An operator question, answered by the inquiry handler at the next safe point."""
        self._interrupts.post_inquiry(message)

    def notify(self, message: str) -> None:
        """A directive injected into the chain root's history at the next safe point (the wind-down)."""
        self._interrupts.post_notice(message)

    def modify_plan(self, message: str) -> PlanChange | None:
        """Stop the work below the plan owner now and hand it ``message``; returns what was stopped.

        ``None``: no role is live yet, so the modification waits for the run's first safe point.
        """
        change = self._apply_plan(message) if self._apply_plan is not None else None
        if change is None:
            self._interrupts.post_early_plan_modification(message)
        return change

    @property
    def pending(self) -> bool:
        """Some request waits for a safe point (the run view's ``interruptPending``)."""
        return self._interrupts.pending
