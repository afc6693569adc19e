"""The operator requests a host may make of one live run, and nothing else: the ``RunControls`` handle.

``execute_prepared`` / ``resume_run`` hand it up with ``task_status.started(controls)`` (trio's
``nursery.start`` pattern) once the run's role tree exists, so a host (the service) routes operator
requests without ever holding the ``Run``.

Two ways to end a run from outside, both cancel scopes: ``RunControls.stop`` cancels the run's *root*
scope (``RunStop``, entered by the runner around the model client, the MCP servers and the role tree):
everything in flight ends at once and the run ends ``cancelled``, its last checkpoint kept. A host
cancelling the scope it runs the run in (shutdown) abandons the run instead: it stays ``running`` and
resumes from its checkpoint at the next start.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.state import RoleFrame
from orchestrator.vocabulary import StopOrigin

__all__ = ["PlanApplier", "PlanChange", "RunControls", "RunStop"]

#: What an applied plan modification did: the plan owner that re-plans, and the instance ids it stopped.
PlanChange = tuple[RoleFrame, list[str]]
#: Applies a plan modification at once; ``None`` when no role is live to take it yet.
PlanApplier = Callable[[str], PlanChange | None]


class RunStop:
    """A run's root cancel scope and who cancelled it. The host creates it before the run starts (a stop
    that arrives before the runner entered the scope ends the run the moment it does)."""

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.by: StopOrigin | None = None

    def stop(self, by: StopOrigin) -> bool:
        """Cancel the run's root scope; ``False`` when it was stopped already (the first origin stays)."""
        if self.by is not None:
            return False
        self.by = by
        self.scope.cancel()
        return True

    @property
    def requested(self) -> bool:
        return self.by is not None


class RunControls:
    """Post operator requests to one run. Posting never blocks; requests the run cannot take now wait
    in its ``InterruptQueue`` for the next safe point (in memory only: a restart loses them)."""

    def __init__(
        self, interrupts: InterruptQueue, apply_plan: PlanApplier | None = None, stop: RunStop | None = None
    ) -> None:
        """``apply_plan``: the live run's immediate plan modification; ``None`` before the run exists
        (every plan modification then waits for the first safe point). ``stop``: the run's root scope."""
        self._interrupts = interrupts
        self._apply_plan = apply_plan
        self._stop = stop or RunStop()

    def stop(self, by: StopOrigin) -> bool:
        """End the run now: cancel its root scope (see ``RunStop``); ``False`` when already stopping."""
        return self._stop.stop(by)

    @property
    def stopping(self) -> bool:
        """A stop was requested (the run is ending, or has ended, ``cancelled``)."""
        return self._stop.requested

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
