"""``list_runs``' compact entries: the task's first line, the duration, only the facts an agent picks by."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.runsface.listing import TASK_HEAD_CHARS, compact_queue_item, compact_run, duration_seconds, task_head


def test_a_run_entry_shrinks_to_five_facts() -> None:
    entry = {
        "runId": "run-20261204-101010",
        "status": "success",
        "task": "Fix the parser\n\nIt fails on empty lines; see issue 4.",
        "startTime": "2026-12-04T10:10:10+00:00",
        "endTime": "2026-12-04T10:12:40.25+00:00",
        "result": {"summary": "x" * 5000},
        "summary": "y" * 5000,
    }
    assert compact_run(entry) == {
        "runId": "run-20261204-101010",
        "status": "success",
        "task": "Fix the parser …",
        "started": "2026-12-04T10:10:10+00:00",
        "durationSeconds": 150.2,
    }
    running = compact_run({**entry, "status": "running", "endTime": None})
    assert running["durationSeconds"] is None


def test_task_heads_and_durations() -> None:
    assert task_head("one line") == "one line"
    assert task_head("  \n\n  second is first\nthird") == "second is first …"
    long = task_head("a" * 500)
    assert long is not None and len(long) == TASK_HEAD_CHARS and long.endswith("…")
    assert task_head(None) is None and task_head("") == ""
    assert duration_seconds("2026-12-04T10:00:00+00:00", "not a time") is None
    assert compact_queue_item({"id": "q-1", "status": "waiting", "task": "t\nmore", "runId": None}) == {
        "queueId": "q-1",
        "status": "waiting",
        "task": "t …",
    }


@given(st.text())
def test_a_task_head_is_one_line_and_bounded(task: str) -> None:
    head = task_head(task)
    assert head is not None and "\n" not in head and len(head) <= TASK_HEAD_CHARS + 2
