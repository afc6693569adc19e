"""The run's-thread half of a run's live export, shared by both places its lines are folded: the sink's
thread in this process (``live.TraceListener``) and the export's own process (``sidecar.SidecarListener``).

On the run's thread a listener only hands each written log line over (an append that never waits), and
notes each model call's first streamed chunk (its time to first chunk); a subclass says where they go.
When the hand-over is refused (full), the run's trace is cut there: the refused line and every later one are
counted as not folded, and a closing ``cut`` is handed over instead, so the spans still open end at the last
folded event — a trace missing its end, never one folded across a gap.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from orchestrator.runlog.events import LlmCallStart, RunEvent

if TYPE_CHECKING:  # annotations only: the sidecar imports this module, and not the engine
    from orchestrator.engine.run import DeltaSink, StreamDelta

__all__ = ["RunTrace", "UnfoldedCounter"]


class UnfoldedCounter(Protocol):
    """Where a listener counts the run-log events it never hands over (``ExportReport.unfolded``)."""

    unfolded: int


class RunTrace:
    """One run's live export, the run's-thread half: call it with every written event and its line
    (``RunServices.log_line_listeners``), and give its ``delta`` the streamed chunks (``attach_trace``)."""

    def __init__(self, counter: UnfoldedCounter) -> None:
        self.counter = counter
        #: the export of this run stopped (its fold failed): nothing more is handed over
        self.broken = False
        #: the hand-over was refused: this run's trace ends there
        self.cut = False
        #: role instances whose model call in flight has not streamed its first chunk yet
        self._awaiting: set[str] = set()

    def __call__(self, event: RunEvent, line: bytes) -> None:
        """Hand the line over; note a model call's start for ``delta``."""
        if type(event) is LlmCallStart and not self.broken and not self.cut:
            self._awaiting.add(event.payload.role_id)
        self.line(line)

    def delta(self, delta: StreamDelta) -> None:
        """``RunServices.on_delta``: hands over each model call's first streamed chunk (its time to first
        chunk); every later chunk costs a set lookup."""
        if delta.role_id in self._awaiting:
            self._awaiting.discard(delta.role_id)
            self.chunk(delta.role_id, time.time_ns())

    def line(self, line: bytes) -> None:
        """Hand a written log line over; refused, the trace is cut (counted in ``unfolded`` from then on)."""
        if self.broken:
            return
        if self.cut:
            self.counter.unfolded += 1
            return
        if not self.hand_line(line):
            self._cut()

    def chunk(self, role_id: str, at_ns: int) -> None:
        """Hand over a model call's first streamed chunk, received at ``at_ns``; refused, the trace is cut."""
        if not self.broken and not self.cut and not self.hand_chunk(role_id, at_ns):
            self._cut()

    def cut_here(self) -> None:
        """End the trace here, as a refused hand-over does."""
        if not self.cut:
            self._cut()

    def tee(self, other: DeltaSink | None) -> DeltaSink:
        """A delta sink feeding this listener and ``other`` (the host's own, when it has one)."""
        if other is None:
            return self.delta

        def both(delta: StreamDelta) -> None:
            other(delta)
            self.delta(delta)

        return both

    def _cut(self) -> None:
        self.cut = True
        self.hand_cut()

    # --- where they go (a subclass) -------------------------------------------------------------------

    def hand_line(self, line: bytes) -> bool:
        """Hand a written log line over; ``False`` when refused (counted in ``unfolded``)."""
        raise NotImplementedError

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        """Hand over a model call's first streamed chunk; ``False`` when refused."""
        raise NotImplementedError

    def hand_cut(self) -> None:
        """Hand over the end of a cut trace; never refused."""
        raise NotImplementedError
