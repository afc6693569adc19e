"""``list_runs``' compact answer: one short line of facts per run and per queued task, for an agent's context.

A whole ``GET /api/runs`` entry carries the result card, the error and the summary; an agent listing runs
wants to pick one, then ask ``run_status`` / ``run_result`` (or ``list_runs`` with ``detail: true``) for the
rest. Pure functions over the service's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["TASK_HEAD_CHARS", "compact_queue_item", "compact_run", "duration_seconds", "task_head"]

#: How much of a task the compact list shows: its first line, cut to this many characters.
TASK_HEAD_CHARS = 80


def task_head(task: object, limit: int = TASK_HEAD_CHARS) -> str | None:
    """The task's first non-empty line, cut to ``limit`` characters (``…`` marks a cut or more lines)."""
    if not isinstance(task, str):
        return None
    lines = [line.strip() for line in task.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    head = lines[0]
    if len(head) > limit:
        return head[: limit - 1].rstrip() + "…"
    return head + (" …" if len(lines) > 1 else "")


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def duration_seconds(start: object, end: object) -> float | None:
    """Seconds from ``start`` to ``end`` (ISO timestamps), to 0.1 s; ``None`` unless both are known."""
    began, ended = _time(start), _time(end)
    if began is None or ended is None:
        return None
    return round((ended - began).total_seconds(), 1)


def compact_run(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``{runId, status, task, started, durationSeconds}`` of one ``GET /api/runs`` entry (``durationSeconds``
    is ``null`` while the run goes on)."""
    return {
        "runId": entry.get("runId"),
        "status": entry.get("status"),
        "task": task_head(entry.get("task")),
        "started": entry.get("startTime"),
        "durationSeconds": duration_seconds(entry.get("startTime"), entry.get("endTime")),
    }


def compact_queue_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """``{queueId, status, task}`` of one queue item, and its ``runId`` once it has one."""
    compact = {"queueId": item.get("id"), "status": item.get("status"), "task": task_head(item.get("task"))}
    if item.get("runId"):
        compact["runId"] = item["runId"]
    return compact
