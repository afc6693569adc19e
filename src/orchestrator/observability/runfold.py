"""A run's fold in the process that exports it: ``TraceListener`` hands each written log line to its sink's
fold thread (``SpanSubmitter.defer``), where it is decoded as ``export-trace`` decodes the file
(``foldinput``) and folded (``spans.fold_span``) into the run's ``TraceState``, which that thread alone
touches from then on. The sidecar (``sidecarproc``) runs one per run; so does a process with an in-process
sink (``sink.SpanSink``, a test's).

When the hand-off is full, the run's trace is cut (``handover.RunTrace``): the spans still open are sent
ended at the last folded event with ``error.type`` ``export_cut`` — a trace missing its end, never one
folded across a gap. A resumed run's listener first folds the log written so far without sending anything
(the previous process sent those spans), so the spans still open at the restart end here with the ids and
start times they had. A fault in the fold is logged once and the export of that run stops; the run never
sees it.

Imports neither the engine nor the SDK: the sidecar starts on what it needs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from orchestrator.observability.foldinput import event_decoder
from orchestrator.observability.handover import RunTrace
from orchestrator.observability.spans import RunInfo, SpanData, TraceState, close_open, first_chunk, fold_span

__all__ = ["CUT", "SpanSubmitter", "TraceListener"]

logger = logging.getLogger("orchestrator.observability")
T = TypeVar("T")
#: ``error.type`` of the spans still open when a run's trace is cut (the hand-off was full)
CUT = "export_cut"


class SpanSubmitter(Protocol):
    """What a listener needs of a sink (``observability.sink.SpanSink``, or a test's)."""

    #: run-log events never folded: refused by a full hand-off, or after their run's trace was cut
    unfolded: int

    @property
    def capture_content(self) -> bool: ...

    def submit(self, spans: Sequence[SpanData]) -> None: ...

    def defer(self, fold: Callable[[T], Sequence[SpanData]], item: T, *, always: bool = False) -> bool:
        """Run ``fold(item)`` on the sink's thread and send the spans it returns; ``False`` (counted in
        ``unfolded``) when the hand-off is full, unless ``always``. Never blocks."""
        ...


class TraceListener(RunTrace):
    """One run's live export in this process: each written line is handed to the sink's thread, which
    folds it (``fold_line``) into the run's ``TraceState``."""

    def __init__(self, sink: SpanSubmitter, info: RunInfo, prior: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(sink)
        self.sink = sink
        #: touched by the sink's thread only, once the first line is handed off
        self.state = TraceState(info, capture_content=sink.capture_content)
        #: what the fold reads of a line (``foldinput``), as ``export-trace`` decodes the file
        self.decode = event_decoder(capture_content=sink.capture_content)
        try:
            for event in prior:  # already sent by the process that wrote them
                fold_span(self.state, event)
        except Exception:
            self.broken = True
            logger.exception("trace export of run %s is off: could not fold its log so far", info.run_id)

    def hand_line(self, line: bytes) -> bool:
        return self.sink.defer(self.fold_line, line)

    def hand_chunk(self, role_id: str, at_ns: int) -> bool:
        return self.sink.defer(self.fold_chunk, (role_id, at_ns))

    def hand_cut(self) -> None:
        self.sink.defer(self.fold_cut, None, always=True)

    # --- the sink's thread ---------------------------------------------------------------------------

    def fold_line(self, line: bytes) -> list[SpanData]:
        """One log line, decoded as ``export-trace`` decodes the file (``foldinput``), folded (``spans.fold_span``)."""
        event = self.decode(line)
        return [] if event is None else self._guard(lambda: fold_span(self.state, event))

    def fold_chunk(self, chunk: tuple[str, int]) -> list[SpanData]:
        role_id, at = chunk
        return self._guard(lambda: first_chunk(self.state, role_id, at))

    def fold_cut(self, _: None) -> list[SpanData]:
        """The spans still open when the trace was cut, ended at the last folded event."""
        return self._guard(lambda: close_open(self.state, "the trace export's hand-off was full", error_type=CUT))

    def _guard(self, fold: Callable[[], list[SpanData] | None]) -> list[SpanData]:
        if self.broken:
            return []
        try:
            return fold() or []
        except Exception:  # the run must not notice: stop exporting this run, say so once
            self.broken = True
            logger.exception("trace export of run %s stopped: could not fold an event", self.state.info.run_id)
            return []
