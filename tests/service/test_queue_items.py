"""The queue item's shape: decode rules naming the field, the wire form, timestamps, the error tree."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import msgspec
import pytest

from orchestrator.service.queue_items import (
    LIVE_STATUSES,
    STATUSES,
    InvalidQueueBody,
    QueueError,
    QueueFile,
    QueueItem,
    QueueNotFound,
    QueueTransitionError,
    check_task,
    check_tier,
    format_timestamp,
    parse_timestamp,
)

QUEUED = "2024-05-01T12:00:00.000Z"
RUN = "run-20240501-120000"


def _decode(**fields: object) -> QueueItem:
    item: dict[str, object] = {"id": "a", "task": "t", "status": "waiting", "queuedAt": QUEUED}
    item.update(fields)
    return msgspec.json.decode(msgspec.json.encode(item), type=QueueItem)


def test_the_statuses_and_the_live_subset() -> None:
    assert {"waiting", "active", "needs_input", "done", "error", "cancelled", "unconfirmed"} == STATUSES
    assert {"waiting", "active", "needs_input", "unconfirmed"} == LIVE_STATUSES
    assert LIVE_STATUSES < STATUSES


def test_a_full_item_round_trips_and_omits_none_on_the_wire() -> None:
    item = QueueItem(id="a", task="t", status="done", queued_at=QUEUED, run_id=RUN, settled_at=QUEUED, effort="quick")
    wire = msgspec.json.decode(msgspec.json.encode(QueueFile(items=[item])))
    assert wire == {
        "items": [
            {
                "id": "a",
                "task": "t",
                "effort": "quick",
                "status": "done",
                "runId": RUN,
                "queuedAt": QUEUED,
                "settledAt": QUEUED,
            }
        ]
    }
    assert msgspec.json.decode(msgspec.json.encode(QueueFile(items=[item])), type=QueueFile).items == [item]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"id": ""}, "id"),
        ({"task": ""}, "task"),
        ({"runId": "run-1"}, "run_id"),
        ({"continuesFrom": "yesterday's run"}, "continues_from"),
        ({"queuedAt": "soon"}, "queued_at"),
        ({"settledAt": "later"}, "settled_at"),
    ],
)
def test_a_decode_that_breaks_a_field_rule_names_the_field(fields: dict[str, object], named: str) -> None:
    with pytest.raises(msgspec.ValidationError, match=named):
        _decode(**fields)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"status": "paused"}, "$.status"),
        ({"effort": "extreme"}, "$.effort"),
        ({"logLevel": "verbose"}, "$.logLevel"),
        ({"task": 3}, "$.task"),
    ],
)
def test_a_value_outside_its_type_names_its_path(fields: dict[str, object], path: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        _decode(**fields)
    assert path in str(info.value)


def test_a_missing_required_field_is_named() -> None:
    with pytest.raises(msgspec.ValidationError, match="queuedAt"):
        msgspec.json.decode(b'{"id": "a", "task": "t", "status": "waiting"}', type=QueueItem)


def test_items_are_frozen() -> None:
    item = _decode()
    with pytest.raises(AttributeError):
        item.task = "other"  # type: ignore[misc]


def test_timestamps_normalise_to_utc_milliseconds() -> None:
    assert parse_timestamp("2024-05-01T12:00:00") == datetime(2024, 5, 1, 12, tzinfo=UTC)  # naive is UTC
    plus_two = datetime(2024, 5, 1, 14, 0, 0, 123456, tzinfo=timezone(timedelta(hours=2)))
    assert format_timestamp(plus_two) == "2024-05-01T12:00:00.123Z"
    assert format_timestamp(datetime(2024, 5, 1, 12)) == QUEUED
    assert parse_timestamp(format_timestamp(plus_two)) == plus_two.replace(microsecond=123000)
    assert parse_timestamp("") is None


def test_check_task_refuses_blank_tasks() -> None:
    check_task("do it")
    for task in ("", "   \n"):
        with pytest.raises(InvalidQueueBody, match="task must be a non-empty string"):
            check_task(task)


def test_check_tier_accepts_the_vocabulary_and_names_the_bad_field() -> None:
    check_tier(None)
    check_tier("thorough", "standard")
    with pytest.raises(InvalidQueueBody, match="effort must be one of"):
        check_tier("max")
    with pytest.raises(InvalidQueueBody, match="logLevel must be full or standard, got 'debug'"):
        check_tier("quick", "debug")


def test_error_codes_and_messages() -> None:
    missing = QueueNotFound("x1")
    assert (missing.code, missing.kind, missing.item_id, missing.detail) == (
        "not_found",
        "not_found",
        "x1",
        {"item_id": "x1"},
    )
    assert str(missing) == "no queue item has id 'x1'"
    refused = QueueTransitionError("done", "cancel", "it already ended")
    assert refused.code == "status_forbidden" and (refused.status, refused.event) == ("done", "cancel")
    assert str(refused) == "a done item cannot take the event 'cancel': it already ended"
    assert str(QueueTransitionError(None, "start")) == "a new item cannot take the event 'start'"
    assert all(isinstance(error, QueueError) for error in (missing, refused, InvalidQueueBody("bad")))
    assert InvalidQueueBody("bad").code == "invalid_body"
