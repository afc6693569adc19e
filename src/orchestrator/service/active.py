"""The one run the service is executing: its id, its scope, and the handle for its operator requests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import trio

from orchestrator.engine.controls import RunControls, RunStop
from orchestrator.engine.interrupts import InterruptQueue

__all__ = ["ActiveRun"]


@dataclass
class ActiveRun:
    """Lives from dispatch to settlement. ``scope`` bounds the run's task: cancelling it (shutdown past
    the wind-down) abandons the run, leaving its checkpoint for the next start. ``stop`` is the run's
    root scope inside it (``RunControls.stop``, the operator's Stop): the run ends ``cancelled``.

    ``controls`` is the run's ``RunControls`` once the engine hands it over (``task_status.started``);
    until then (the model probe, the run's start-up) it posts every request to the same ``interrupts``
    queue the run will drain at its first safe point.
    """

    run_id: str
    run_dir: Path
    item_id: str | None
    task: str
    interrupts: InterruptQueue = field(default_factory=InterruptQueue)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    stop: RunStop = field(default_factory=RunStop)
    done: trio.Event = field(default_factory=trio.Event)
    controls: RunControls = field(init=False)

    def __post_init__(self) -> None:
        self.controls = RunControls(self.interrupts, stop=self.stop)
