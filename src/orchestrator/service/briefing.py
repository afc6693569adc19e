"""What a dispatched queue item's run is told: the interim briefing, the continuation block, the submission.

Pure: metas and items come in, text and data go out. The scheduler
loads the metas and the queue, calls ``build_submission`` and hands ``Submission.first_message()``
to the engine as the entry role's first user message (``meta.task`` stays the bare task).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from orchestrator.engine.runfolder import TERMINAL_STATUSES, RunMeta
from orchestrator.service.queue import parse_timestamp

if TYPE_CHECKING:
    from orchestrator.service.queue import QueueItem

__all__ = [
    "BRIEFING_RUN_LIMIT",
    "Continuation",
    "Submission",
    "build_submission",
    "cancelled_since",
    "completed_since",
    "continuation_block",
    "interim_briefing",
    "prior_summary",
]

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


def prior_summary(meta: RunMeta) -> str:
    """What a continuation quotes of a prior run: its result summary, else its error message, else ``""``."""
    if meta.result is not None and meta.result.summary:
        return meta.result.summary
    return (meta.error.message or "") if meta.error is not None else ""


def continuation_block(run_id: str, prior_task: str, summary: str, status: str | None = None) -> str:
    """The marked block a continuation carries (same shape as ``engine.runner.continuation_briefing``)."""
    outcome = f"Prior result ({status})" if status else "Prior result"
    return "\n".join(
        [
            f"[Platform briefing — this run continues run {run_id}]",
            f"Prior task: {prior_task}",
            f"{outcome}: {summary or '(no summary)'}",
            f'Prior plan: read it with read_plan using runId "{run_id}".',
            "[End of briefing]",
        ]
    )


@dataclass(frozen=True)
class Continuation:
    """A queue submission's continuation. ``run_id`` is set only when ``continuesFrom`` names a
    readable terminal meta (then ``meta.continuesFrom`` is recorded); otherwise it is briefing-only."""

    briefing: str
    run_id: str | None = None
    prior_task: str | None = None
    prior_summary: str | None = None
    prior_status: str | None = None

    def text(self) -> str:
        """The continuation block (when there is a prior run) followed by the interim briefing."""
        if self.run_id is None:
            return self.briefing
        block = continuation_block(self.run_id, self.prior_task or "", self.prior_summary or "", self.prior_status)
        return f"{block}\n\n{self.briefing}"


@dataclass(frozen=True)
class Submission:
    """Everything the scheduler submits for one queue item (the run is flagged queue-tracked)."""

    item_id: str
    task: str
    effort: str | None
    log_level: str | None
    continuation: Continuation

    def first_message(self) -> str:
        """The entry role's first user message: the task verbatim, then the continuation text."""
        return f"{self.task}\n\n{self.continuation.text()}"


def build_submission(item: QueueItem, items: Iterable[QueueItem], metas: Mapping[str, RunMeta]) -> Submission:
    """The submission for ``item`` given the queue and every readable meta (run id → meta)."""
    briefing = interim_briefing(item.queued_at, metas.values(), items, item.question, item.answer)
    prior = metas.get(item.continues_from) if item.continues_from else None
    if prior is not None and prior.status in TERMINAL_STATUSES:
        continuation = Continuation(briefing, prior.run_id, prior.task, prior_summary(prior), prior.status)
    else:
        continuation = Continuation(briefing)
    return Submission(item.id, item.task, item.effort, item.log_level, continuation)
