"""The one run the service is executing: its id, its scope, its operator-request queue, its ``Run``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.engine.interrupts import InterruptQueue
from orchestrator.engine.run import Run

__all__ = ["ActiveRun"]


@dataclass
class ActiveRun:
    """Lives from dispatch to settlement. ``scope`` bounds the run's task: cancelling it (shutdown past
    the wind-down) abandons the run, leaving its checkpoint for the next start."""

    run_id: str
    run_dir: Path
    item_id: str | None
    task: str
    interrupts: InterruptQueue = field(default_factory=InterruptQueue)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    run: Run | None = None

    @property
    def interrupt_pending(self) -> bool:
        return self.interrupts.pending
