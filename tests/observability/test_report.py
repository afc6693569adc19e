"""``observability.report.ExportReport``: what was dropped is what was submitted and not exported."""

from __future__ import annotations

from orchestrator.observability.report import ExportReport


def test_dropped_is_submitted_less_exported_and_unfolded_events_are_apart() -> None:
    report = ExportReport(submitted=10, exported=7, unfolded=3)
    assert report.dropped == 3
    assert ExportReport(submitted=0, exported=0).dropped == 0
