"""What a dispatched queue item's run is told besides its task: the interim briefing.

Pure: metas and items come in, text goes out. The scheduler (``core.Service``) hands the briefing to
``prepare_run``, which appends it below the task and any continuation block
(``engine.runner.continuation_briefing``); ``meta.task`` stays the bare task.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

from orchestrator.engine.runfolder import TERMINAL_STATUSES, RunMeta
from orchestrator.service.queue import parse_timestamp

if TYPE_CHECKING:
    from orchestrator.service.queue import QueueItem

__all__ = ["BRIEFING_RUN_LIMIT", "cancelled_since", "completed_since", "interim_briefing"]

#: How many completed runs (the most recent ones) the interim briefing lists.
BRIEFING_RUN_LIMIT = 20
#: How many cancelled items (the most recent ones) the interim briefing lists.
BRIEFING_CANCELLED_LIMIT = 20
#: One briefing line quotes at most this many characters of a summary or task.
LINE_LIMIT = 300


def _one_line(text: str, limit: int = LINE_LIMIT) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _after(stamp: str | None, since: datetime) -> datetime | None:
    """``stamp`` parsed, when it is strictly later than ``since``; else ``None``."""
    parsed = parse_timestamp(stamp) if stamp else None
    return parsed if parsed is not None and parsed > since else None


def completed_since(metas: Iterable[RunMeta], queued_at: str, *, limit: int = BRIEFING_RUN_LIMIT) -> list[RunMeta]:
    """Terminal runs whose ``endTime`` is after ``queued_at``, oldest first, the last ``limit`` of them.

    A meta without a parseable ``endTime`` is left out; so is everything when ``queued_at`` does not parse.
    """
    since = parse_timestamp(queued_at)
    if since is None:
        return []
    ended = []
    for meta in metas:
        end = _after(meta.end_time, since)
        if end is not None and meta.status in TERMINAL_STATUSES:
            ended.append((end, meta.run_id, meta))
    ended.sort(key=lambda entry: (entry[0], entry[1]))
    return [meta for _, _, meta in ended[-limit:]] if limit > 0 else []


def cancelled_since(items: Iterable[QueueItem | str], queued_at: str) -> list[str]:
    """Tasks of the items cancelled after ``queued_at``, oldest first, the last ``BRIEFING_CANCELLED_LIMIT``.

    A plain string is a task the caller already selected; strings follow the items, in their order.
    """
    since = parse_timestamp(queued_at)
    dated: list[tuple[datetime, str]] = []
    given: list[str] = []
    for item in items:
        if isinstance(item, str):
            given.append(item)
        elif since is not None and item.status == "cancelled":
            at = _after(item.settled_at, since)
            if at is not None:
                dated.append((at, item.task))
    dated.sort(key=lambda entry: entry[0])
    return [*(task for _, task in dated), *given][-BRIEFING_CANCELLED_LIMIT:]


def _run_line(meta: RunMeta) -> str:
    summary = meta.result.summary if meta.result is not None else ""
    return f"- {meta.run_id}: {_one_line(summary or meta.task or '(no summary)')}"


def interim_briefing(
    queued_at: str,
    completed_runs: Iterable[RunMeta],
    cancelled_items: Iterable[QueueItem | str],
    question: str | None = None,
    answer: str | None = None,
) -> str:
    """The block appended below a queued task. Filters its inputs itself, so callers may pass
    every meta and every item (or task strings already selected). ``question``/``answer`` are given on
    a parked-answer continuation; they appear only when ``answer`` is set."""
    runs = completed_since(completed_runs, queued_at)
    cancelled = cancelled_since(cancelled_items, queued_at)
    lines = ["[Platform briefing — this task waited in the queue]", f"Queued at {queued_at}."]
    if runs:
        lines += ["Runs completed meanwhile:", *(_run_line(meta) for meta in runs)]
    else:
        lines.append("Runs completed meanwhile: none.")
    if cancelled:
        lines += ["Queue items cancelled meanwhile:", *(f"- {_one_line(task)}" for task in cancelled)]
    else:
        lines.append("Queue items cancelled meanwhile: none.")
    if answer is not None:
        lines.append(f"Before this run, the task paused to ask: {question or '(question not recorded)'}")
        lines.append(f"The operator answered: {answer}")
    lines.append(
        "The workspace may have changed since this task was queued: check its current state before acting, "
        "and if a run above already did this task, say so (naming that run) instead of redoing it."
    )
    lines.append("[End of briefing]")
    return "\n".join(lines)
