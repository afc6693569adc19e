"""The durable task queue's state machine: item shape, events, and pure transitions.

Nothing here does I/O or reads the clock: ``transition(items, event, now)`` takes the whole item list
and returns a new one plus ``Effects``; the input list and its items are never mutated (items are
frozen Structs). ``queue_store`` owns the file and the lock; the scheduler owns the run slot.

Every legal move is a row of ``TRANSITIONS``, keyed by ``(status, event kind)`` (``None`` = no item
yet). A pair missing from the table raises ``QueueTransitionError`` naming both; its API code is
``status_forbidden``. Errors::

    QueueError                 code is API: {"ok": false, "error": code}
    ├── QueueNotFound          "not_found"         (404) no item has that id
    ├── QueueTransitionError   "status_forbidden"  (409) the item's status does not allow the event
    └── InvalidQueueBody       "invalid_body"      (400) an empty task, a bad tier, a non-numeric position
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import ClassVar

import msgspec

from orchestrator.engine.runfolder import RUN_ID_PATTERN, TERMINAL_STATUSES, RunMeta
from orchestrator.service.queue_items import (
    LIVE_STATUSES,
    PARK_PREFIX,
    STATUSES,
    InvalidQueueBody,
    ItemStatus,
    QueueError,
    QueueFile,
    QueueItem,
    QueueNotFound,
    QueueTransitionError,
    check_task,
    check_tier,
    format_timestamp,
    parse_position,
    parse_timestamp,
)

__all__ = [
    "LIVE_STATUSES",
    "PARK_PREFIX",
    "STATUSES",
    "TRANSITIONS",
    "Answer",
    "Bind",
    "Cancel",
    "Confirm",
    "Dispatch",
    "Edit",
    "Effects",
    "Enqueue",
    "InvalidQueueBody",
    "ItemEvent",
    "ItemStatus",
    "QueueError",
    "QueueEvent",
    "QueueFile",
    "QueueItem",
    "QueueNotFound",
    "QueueTransitionError",
    "Release",
    "Repair",
    "Requeue",
    "Settle",
    "Withdraw",
    "active_item",
    "format_timestamp",
    "next_dispatch",
    "parse_position",
    "parse_timestamp",
    "question_from_summary",
    "transition",
]

# --- events --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Enqueue:
    """``POST /api/queue`` (tail) or ``POST /api/runs`` (``at_head``, with ``log_level``)."""

    kind: ClassVar[str] = "enqueue"
    task: str
    effort: str | None = None
    log_level: str | None = None
    continues_from: str | None = None
    at_head: bool = False
    item_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass(frozen=True)
class ItemEvent:
    """An event naming one item by id; each subclass is one event kind."""

    kind: ClassVar[str] = ""
    item_id: str


class Dispatch(ItemEvent):
    """The tick's dispatch marker: ``waiting`` → ``active`` without ``runId``."""

    kind = "dispatch"


@dataclass(frozen=True)
class Bind(ItemEvent):
    """The run was accepted: fill the marker's ``runId``."""

    kind = "bind"
    run_id: str


class Release(ItemEvent):
    """Submission refused (``run_in_progress``, collisions exhausted): the marker goes back to ``waiting``."""

    kind = "release"


class Withdraw(ItemEvent):
    """Remove a never-run item outright (a failed ``POST /api/runs`` takes its head item back)."""

    kind = "withdraw"


@dataclass(frozen=True)
class Edit(ItemEvent):
    """``PATCH /api/queue/:id``: any of task, effort, position (0-based among waiting, clamped)."""

    kind = "edit"
    task: str | None = None
    effort: str | None = None
    position: int | None = None


class Cancel(ItemEvent):
    """``DELETE /api/queue/:id``."""

    kind = "cancel"


class Confirm(ItemEvent):
    """``POST /api/queue/:id/confirm``: the operator takes an item this service did not accept as its own."""

    kind = "confirm"


@dataclass(frozen=True)
class Answer(ItemEvent):
    """``POST /api/queue/:id/answer``."""

    kind = "answer"
    answer: str


class Requeue(ItemEvent):
    """``POST /api/queue/:id/requeue``."""

    kind = "requeue"


@dataclass(frozen=True)
class Settle:
    """A run ended. Targets the still-``active`` item bound to ``run_id``; no such item → no change.

    ``status`` is the meta status; ``summary`` the meta ``result.summary``; ``error`` the meta
    ``result.error.message`` else ``error.message``; ``question`` what a ``needs_clarification`` run
    waits on (the item's ``question``); ``at`` overrides ``settledAt`` (boot: meta endTime).
    """

    kind: ClassVar[str] = "settle"
    run_id: str
    status: str
    summary: str | None = None
    error: str | None = None
    question: str | None = None
    at: str | None = None

    @classmethod
    def from_meta(cls, meta: RunMeta, *, question: str | None = None, at_end_time: bool = False) -> Settle:
        """The settlement a run's meta describes. ``question``: the parked question as the run's outcome
        carries it; absent (a meta read from disk, e.g. at boot), it is recovered from the summary."""
        if question is None and meta.status == "needs_clarification" and meta.result is not None:
            question = question_from_summary(meta.result.summary)
        card_error = meta.result.error if meta.result is not None else None
        error = (card_error.message if card_error is not None else None) or (
            meta.error.message if meta.error is not None else None
        )
        return cls(
            run_id=meta.run_id,
            status=meta.status,
            summary=meta.result.summary if meta.result is not None else None,
            error=error,
            question=question,
            at=meta.end_time if at_end_time else None,
        )


@dataclass(frozen=True)
class Repair:
    """Apply the boot rows (docs/queueing.md) to every ``active`` item. ``metas`` maps run id → readable meta."""

    kind: ClassVar[str] = "repair"
    metas: Mapping[str, RunMeta]


QueueEvent = (
    Enqueue | Dispatch | Bind | Release | Withdraw | Edit | Cancel | Confirm | Answer | Requeue | Settle | Repair
)


@dataclass(frozen=True)
class Effects:
    """What the caller does next. ``item``: the affected item after the event (the API's response);
    ``tick``: run a scheduler tick; ``changed``: the list differs (else skip the write)."""

    item: QueueItem | None = None
    tick: bool = False
    changed: bool = True


# --- helpers -------------------------------------------------------------------------------------


def question_from_summary(summary: str | None) -> str | None:
    """The question a ``needs_clarification`` meta read from disk waits on: its result summary minus
    ``PARK_PREFIX`` (how a parked run's card reads), else the summary verbatim."""
    if not summary:
        return None
    return summary[len(PARK_PREFIX) :] if summary.startswith(PARK_PREFIX) else summary


def _rebuild(item: QueueItem, status: ItemStatus, continues_from: str | None) -> QueueItem:
    """A fresh item keeping id, task, effort, logLevel, question, answer, queuedAt; outcome fields dropped."""
    return QueueItem(
        id=item.id,
        task=item.task,
        effort=item.effort,
        log_level=item.log_level,
        continues_from=continues_from,
        status=status,
        queued_at=item.queued_at,
        question=item.question,
        answer=item.answer,
    )


def _index(items: Sequence[QueueItem], item_id: str) -> int:
    for i, item in enumerate(items):
        if item.id == item_id:
            return i
    raise QueueNotFound(item_id)


def _replace(items: Sequence[QueueItem], i: int, new: QueueItem) -> list[QueueItem]:
    return [*items[:i], new, *items[i + 1 :]]


def _without(items: Sequence[QueueItem], i: int) -> list[QueueItem]:
    return [*items[:i], *items[i + 1 :]]


# --- the transition table ------------------------------------------------------------------------

Handler = Callable[[list[QueueItem], int, QueueEvent, str], tuple[list[QueueItem], Effects]]


def _enqueue(items: list[QueueItem], _i: int, ev: QueueEvent, now: str) -> tuple[list[QueueItem], Effects]:
    assert isinstance(ev, Enqueue)
    check_task(ev.task)
    check_tier(ev.effort, ev.log_level)
    if ev.continues_from is not None and not RUN_ID_PATTERN.match(ev.continues_from):
        raise InvalidQueueBody(f"continuesFrom {ev.continues_from!r} is not a run id (run-YYYYMMDD-HHMMSS)")
    if any(item.id == ev.item_id for item in items):
        raise InvalidQueueBody(f"a queue item already has id {ev.item_id!r}")
    new = QueueItem(
        id=ev.item_id,
        task=ev.task,
        effort=ev.effort,  # type: ignore[arg-type]
        log_level=ev.log_level,  # type: ignore[arg-type]
        continues_from=ev.continues_from,
        status="waiting",
        queued_at=now,
    )
    return ([new, *items] if ev.at_head else [*items, new]), Effects(new, tick=True)


def _dispatch(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    busy = active_item(items)
    if busy is not None:
        raise QueueTransitionError(items[i].status, ev.kind, f"item {busy.id!r} is already active (one at a time)")
    new = msgspec.structs.replace(items[i], status="active", run_id=None)
    return _replace(items, i, new), Effects(new)


def _require_marker(item: QueueItem, event: str) -> None:
    if item.run_id is not None:
        raise QueueTransitionError(item.status, event, f"the item is already bound to {item.run_id}")


def _bind(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    assert isinstance(ev, Bind)
    _require_marker(items[i], ev.kind)
    new = msgspec.structs.replace(items[i], run_id=ev.run_id)
    return _replace(items, i, new), Effects(new)


def _release(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    _require_marker(items[i], ev.kind)
    new = _rebuild(items[i], "waiting", items[i].continues_from)
    return _replace(items, i, new), Effects(new)


def _withdraw(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    _require_marker(items[i], ev.kind)
    return _without(items, i), Effects(items[i])


def _move(items: list[QueueItem], i: int, position: int) -> list[QueueItem]:
    """Move ``items[i]`` to ``position`` among the waiting items, clamped; settled items keep their places
    (moving up lands just before the item it passes, moving down just after it)."""
    moving, rest = items[i], _without(items, i)
    waiting_at = [j for j, item in enumerate(rest) if item.status == "waiting"]
    current = sum(1 for j in waiting_at if j < i)
    position = min(max(position, 0), len(waiting_at))
    if position == current:
        return items
    at = waiting_at[position] if position < current else waiting_at[position - 1] + 1
    return [*rest[:at], moving, *rest[at:]]


def _edit(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    assert isinstance(ev, Edit)
    if ev.task is not None:
        check_task(ev.task)
    check_tier(ev.effort)
    new = items[i]
    if ev.task is not None:
        new = msgspec.structs.replace(new, task=ev.task)
    if ev.effort is not None:
        new = msgspec.structs.replace(new, effort=ev.effort)
    result = _replace(items, i, new)
    if ev.position is not None:
        result = _move(result, i, ev.position)
    return result, Effects(new, changed=result != items)


def _cancel(items: list[QueueItem], i: int, _ev: QueueEvent, now: str) -> tuple[list[QueueItem], Effects]:
    new = msgspec.structs.replace(items[i], status="cancelled", settled_at=now)
    return _replace(items, i, new), Effects(new)


def _confirm(items: list[QueueItem], i: int, _ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    item = items[i]
    new = _rebuild(item, "waiting", item.continues_from)
    return _replace(items, i, new), Effects(new, tick=True)


def _answer(items: list[QueueItem], i: int, ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    assert isinstance(ev, Answer)
    if not isinstance(ev.answer, str) or not ev.answer.strip():
        raise InvalidQueueBody("answer must be a non-empty string")
    item = items[i]
    new = msgspec.structs.replace(_rebuild(item, "waiting", item.run_id or item.continues_from), answer=ev.answer)
    return [new, *_without(items, i)], Effects(new, tick=True)


def _requeue(items: list[QueueItem], i: int, _ev: QueueEvent, _now: str) -> tuple[list[QueueItem], Effects]:
    item = items[i]
    new = _rebuild(item, "waiting", item.run_id or item.continues_from)
    return [*_without(items, i), new], Effects(new, tick=True)


def _settle(items: list[QueueItem], i: int, ev: QueueEvent, now: str) -> tuple[list[QueueItem], Effects]:
    assert isinstance(ev, Settle)
    item = items[i]
    if ev.status == "needs_clarification":
        parked = _rebuild(item, "needs_input", ev.run_id)
        new = msgspec.structs.replace(parked, run_id=ev.run_id, question=ev.question or None, answer=None)
    elif ev.status in ("success", "error"):
        new = msgspec.structs.replace(
            item,
            status="done" if ev.status == "success" else "error",
            result_summary=ev.summary,
            error=(ev.error or ev.summary or "the run ended with status error") if ev.status == "error" else None,
            settled_at=ev.at or now,
        )
    elif ev.status == "cancelled":  # the operator stopped the run: the item is over, its run kept
        new = msgspec.structs.replace(item, status="cancelled", error=ev.error, settled_at=ev.at or now)
    elif ev.status == "interrupted":
        new = _rebuild(item, "waiting", ev.run_id)
    else:
        raise QueueTransitionError(item.status, ev.kind, f"a run cannot settle as {ev.status!r}")
    return _replace(items, i, new), Effects(new, tick=True)


TRANSITIONS: dict[tuple[str | None, str], Handler] = {
    (None, "enqueue"): _enqueue,
    ("waiting", "dispatch"): _dispatch,
    ("active", "bind"): _bind,
    ("active", "release"): _release,
    ("waiting", "withdraw"): _withdraw,
    ("active", "withdraw"): _withdraw,
    ("waiting", "edit"): _edit,
    ("waiting", "cancel"): _cancel,
    ("unconfirmed", "confirm"): _confirm,
    ("unconfirmed", "cancel"): _cancel,
    ("needs_input", "answer"): _answer,
    ("error", "requeue"): _requeue,
    ("active", "settle"): _settle,
}


def transition(items: Sequence[QueueItem], event: QueueEvent, now: datetime) -> tuple[list[QueueItem], Effects]:
    """Apply one event to the whole queue. Returns the new list and what to do next.

    Raises ``QueueNotFound``, ``QueueTransitionError`` (status_forbidden) or ``InvalidQueueBody``;
    on a raise nothing was changed (the input is never mutated).
    """
    stamp = format_timestamp(now)
    current = list(items)
    if isinstance(event, Repair):
        return _repair(current, event.metas, stamp)
    if isinstance(event, Enqueue):
        return TRANSITIONS[(None, event.kind)](current, -1, event, stamp)
    if isinstance(event, Settle):
        for i, item in enumerate(current):
            if item.status == "active" and item.run_id == event.run_id:
                return TRANSITIONS[("active", event.kind)](current, i, event, stamp)
        return current, Effects(tick=True, changed=False)
    i = _index(current, event.item_id)
    handler = TRANSITIONS.get((current[i].status, event.kind))
    if handler is None:
        raise QueueTransitionError(current[i].status, event.kind)
    return handler(current, i, event, stamp)


# --- boot repair ---------------------------------------------------------------------------------


def _repair(items: list[QueueItem], metas: Mapping[str, RunMeta], now: str) -> tuple[list[QueueItem], Effects]:
    """The boot rows (docs/queueing.md) over every ``active`` item; cheap and a no-op when steady."""
    result = list(items)
    for i, item in enumerate(items):
        if item.status != "active":
            continue
        if item.run_id is None:
            result[i] = _repair_marker(item, result, metas)
            continue
        meta = metas.get(item.run_id)
        if meta is not None and meta.status == "running":
            continue
        if meta is not None and meta.status in TERMINAL_STATUSES:
            result, _ = _settle(result, i, Settle.from_meta(meta, at_end_time=True), now)
        else:
            result[i] = _rebuild(item, "waiting", item.continues_from)
    return result, Effects(tick=result != items, changed=result != items)


def _repair_marker(item: QueueItem, items: Sequence[QueueItem], metas: Mapping[str, RunMeta]) -> QueueItem:
    """An orphan dispatch marker binds to the unique ``running`` run with the same task, else waits."""
    bound = {other.run_id for other in items if other.status == "active" and other.run_id is not None}
    running = [meta for meta in metas.values() if meta.status == "running"]
    if len(running) == 1 and running[0].task == item.task and running[0].run_id not in bound:
        return msgspec.structs.replace(item, run_id=running[0].run_id)
    return _rebuild(item, "waiting", item.continues_from)


# --- scheduler helpers ---------------------------------------------------------------------------


def next_dispatch(items: Sequence[QueueItem]) -> QueueItem | None:
    """The item the next tick dispatches: the first ``waiting`` one in file order."""
    return next((item for item in items if item.status == "waiting"), None)


def active_item(items: Sequence[QueueItem]) -> QueueItem | None:
    """The first ``active`` item (bound or a dispatch marker), if any."""
    return next((item for item in items if item.status == "active"), None)
