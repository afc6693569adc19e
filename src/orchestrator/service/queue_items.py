"""The queue item's shape, its constants and the queue's error tree (pure; see ``queue``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import ClassVar, Literal

from orchestrator.engine.runfolder import RUN_ID_PATTERN
from orchestrator.errors import OrchestratorError
from orchestrator.schema import Base
from orchestrator.vocabulary import EFFORT_TIERS, LOG_LEVELS, Effort, LogLevel

__all__ = [
    "LIVE_STATUSES",
    "PARK_PREFIX",
    "STATUSES",
    "InvalidQueueBody",
    "ItemStatus",
    "QueueError",
    "QueueFile",
    "QueueItem",
    "QueueNotFound",
    "QueueTransitionError",
    "check_task",
    "check_tier",
    "format_timestamp",
    "parse_position",
    "parse_timestamp",
]

#: ``unconfirmed``: an item this service did not accept itself (no valid seal, see ``queue_seal``); it waits
#: for the operator's ``POST /api/queue/<id>/confirm`` and is never dispatched before.
ItemStatus = Literal["waiting", "active", "needs_input", "done", "error", "cancelled", "unconfirmed"]
STATUSES: frozenset[str] = frozenset(ItemStatus.__args__)  # type: ignore[attr-defined]
#: Statuses that no pruning, move or repair may ever drop from the file.
LIVE_STATUSES: frozenset[str] = frozenset({"waiting", "active", "needs_input", "unconfirmed"})
#: How a parked run's card summary reads: ``PARK_PREFIX + question``. The question reaches the queue typed
#: (``Settle.question``); this is only for a meta read from disk (``queue.question_from_summary``).
PARK_PREFIX = "waiting for an answer to: "


def parse_timestamp(value: str) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (naive = UTC), or ``None`` when it does not parse."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def format_timestamp(now: datetime) -> str:
    """``now`` in the project's timestamp form: UTC, milliseconds, ``Z`` (as ``utc_timestamp``)."""
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class QueueItem(Base, frozen=True, kw_only=True):
    """One queued task. Optional fields are ``None`` in memory and omitted on disk, never null.

    Decoding (and construction) checks every field rule of the queue item; a violation is a
    ``msgspec.ValidationError`` on decode, a ``ValueError`` on construction.
    """

    id: str
    task: str
    effort: Effort | None = None
    log_level: LogLevel | None = None
    continues_from: str | None = None
    status: ItemStatus
    run_id: str | None = None
    queued_at: str
    settled_at: str | None = None
    question: str | None = None
    answer: str | None = None
    result_summary: str | None = None
    error: str | None = None
    #: HMAC binding the item to this service and workspace (``queue_seal``); never shown by the API.
    seal: str | None = None

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("id must be a non-empty string")
        if not self.task:
            raise ValueError("task must be a non-empty string")
        for name in ("continues_from", "run_id"):
            value = getattr(self, name)
            if value is not None and not RUN_ID_PATTERN.match(value):
                raise ValueError(f"{name} {value!r} is not a run id (run-YYYYMMDD-HHMMSS)")
        for name in ("queued_at", "settled_at"):
            value = getattr(self, name)
            if value is not None and parse_timestamp(value) is None:
                raise ValueError(f"{name} {value!r} is not an ISO-8601 timestamp")


class QueueFile(Base):
    """``.orchestration/queue.json``: the items, head first."""

    items: list[QueueItem] = []


# --- errors --------------------------------------------------------------------------------------


class QueueError(OrchestratorError):
    """A queue operation refused; ``code`` is the API error string."""

    code: ClassVar[str] = "invalid_body"
    kind = "invalid_body"


class QueueNotFound(QueueError):
    code = kind = "not_found"

    def __init__(self, item_id: str) -> None:
        super().__init__(f"no queue item has id {item_id!r}", item_id=item_id)
        self.item_id = item_id


class QueueTransitionError(QueueError):
    code = kind = "status_forbidden"

    def __init__(self, status: str | None, event: str, detail: str = "") -> None:
        text = f"a {status or 'new'} item cannot take the event {event!r}"
        super().__init__(f"{text}: {detail}" if detail else text, status=status, event=event)
        self.status = status
        self.event = event


class InvalidQueueBody(QueueError):
    code = kind = "invalid_body"


def parse_position(value: object) -> int:
    """A PATCH ``position`` as an int (any int: the move clamps it). Raises ``InvalidQueueBody``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidQueueBody(f"position must be a number, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise InvalidQueueBody(f"position must be a whole number, got {value!r}")
    return int(value)


def check_task(task: str) -> None:
    if not isinstance(task, str) or not task.strip():
        raise InvalidQueueBody("task must be a non-empty string")


def check_tier(effort: str | None, log_level: str | None = None) -> None:
    if effort is not None and effort not in EFFORT_TIERS:
        raise InvalidQueueBody(f"effort must be one of quick, standard, thorough, got {effort!r}")
    if log_level is not None and log_level not in LOG_LEVELS:
        raise InvalidQueueBody(f"logLevel must be full or standard, got {log_level!r}")
