"""The run log: event schema, the append-only writer with its level filter, reading and the delta fold."""

from orchestrator.runlog.events import RunEvent
from orchestrator.runlog.fold import fold_request
from orchestrator.runlog.reader import read_events
from orchestrator.runlog.writer import RunLog, apply_level, utc_timestamp

__all__ = ["RunEvent", "RunLog", "apply_level", "fold_request", "read_events", "utc_timestamp"]
