"""What became of the spans handed to a trace export (``sink.SpanSink``, ``sidecar.SidecarSink``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ExportReport"]


@dataclass(frozen=True)
class ExportReport:
    """What became of the spans handed to a sink."""

    submitted: int
    exported: int
    #: run-log events never folded (a full hand-off cut their run's trace): their spans are not counted
    unfolded: int = 0

    @property
    def dropped(self) -> int:
        return self.submitted - self.exported
