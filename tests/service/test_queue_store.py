"""``queue.json`` on disk: tolerant load, atomic save, round trip, and the store's serialized transitions."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
import trio.lowlevel
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.service import queue as q
from orchestrator.service.queue import Cancel, Enqueue, QueueItem, QueueNotFound
from orchestrator.service.queue_store import QueueStore, load_queue, queue_path, save_queue
from orchestrator.vocabulary import EFFORT_TIERS, LOG_LEVELS

QUEUED = "2024-05-01T10:00:00.000Z"
R1 = "run-20240501-110000"


def it(item_id: str, status: str = "waiting", **fields: Any) -> QueueItem:
    return QueueItem(id=item_id, task=f"task {item_id}", status=status, queued_at=QUEUED, **fields)


def write(workspace: Path, payload: bytes | str | object) -> None:
    path = queue_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(payload, str):
        payload = payload.encode()
    path.write_bytes(payload if isinstance(payload, bytes) else json.dumps(payload).encode())


def valid_item(**fields: Any) -> dict[str, Any]:
    return {"id": "a", "task": "t", "status": "waiting", "queuedAt": QUEUED} | fields


# --- load / save ---------------------------------------------------------------------------------------


def test_save_creates_the_directory_and_omits_optional_fields(tmp_path: Path) -> None:
    save_queue(tmp_path, [it("a"), it("b", "active", run_id=R1, effort="quick")])
    raw = json.loads(queue_path(tmp_path).read_text())
    assert raw == {
        "items": [
            {"id": "a", "task": "task a", "status": "waiting", "queuedAt": QUEUED},
            {"id": "b", "task": "task b", "effort": "quick", "status": "active", "runId": R1, "queuedAt": QUEUED},
        ]
    }
    assert "null" not in queue_path(tmp_path).read_text()
    assert [p.name for p in queue_path(tmp_path).parent.iterdir()] == ["queue.json"]


def test_missing_file_is_an_empty_queue(tmp_path: Path) -> None:
    assert load_queue(tmp_path) == []


@pytest.mark.parametrize(
    "payload",
    [
        "",
        '{"items": [{"id": "a", "task": "t", "stat',  # torn
        "not json",
        "[]",
        '{"items": null}',
        {"items": [valid_item(), valid_item(id="b", status="paused")]},
        {"items": [valid_item(), valid_item(id="b", task="")]},
        {"items": [valid_item(), valid_item(id="")]},
        {"items": [valid_item(), valid_item(id="b", runId="run-1")]},
        {"items": [valid_item(), valid_item(id="b", continuesFrom="yesterday")]},
        {"items": [valid_item(), valid_item(id="b", queuedAt="soon")]},
        {"items": [valid_item(), {"id": "b", "task": "t", "status": "waiting"}]},
        {"items": [valid_item(), valid_item(id="b", effort="max")]},
        {"items": [valid_item(), valid_item(id="b", logLevel="debug")]},
        {"items": [valid_item(), valid_item()]},  # duplicate id
        b"\xff\xfe garbage",
        "[" * 100_000,
    ],
    ids=[
        "empty",
        "torn",
        "not-json",
        "list",
        "null-items",
        "bad-status",
        "empty-task",
        "empty-id",
        "bad-run-id",
        "bad-lineage",
        "bad-queued-at",
        "no-queued-at",
        "bad-effort",
        "bad-log-level",
        "duplicate-id",
        "binary",
        "deep",
    ],
)
def test_a_malformed_file_or_one_invalid_item_reads_as_empty(tmp_path: Path, payload: object) -> None:
    write(tmp_path, payload)
    assert load_queue(tmp_path) == []


def test_a_directory_in_place_of_the_file_reads_as_empty(tmp_path: Path) -> None:
    queue_path(tmp_path).mkdir(parents=True)
    assert load_queue(tmp_path) == []


def test_unknown_keys_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, {"version": 2, "items": [valid_item(priority=3)]})
    assert load_queue(tmp_path) == [QueueItem(id="a", task="t", status="waiting", queued_at=QUEUED)]


_stamps = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)).map(
    q.format_timestamp
)
_run_ids = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)).map(
    lambda d: d.strftime("run-%Y%m%d-%H%M%S")
)
_text = st.text(min_size=1, max_size=40)
_items = st.builds(
    QueueItem,
    id=st.uuids(version=4).map(str) | _text,
    task=_text,
    effort=st.none() | st.sampled_from(sorted(EFFORT_TIERS)),
    log_level=st.none() | st.sampled_from(sorted(LOG_LEVELS)),
    continues_from=st.none() | _run_ids,
    status=st.sampled_from(sorted(q.STATUSES)),
    run_id=st.none() | _run_ids,
    queued_at=_stamps,
    settled_at=st.none() | _stamps,
    question=st.none() | st.text(max_size=40),
    answer=st.none() | st.text(max_size=40),
    result_summary=st.none() | st.text(max_size=40),
    error=st.none() | st.text(max_size=40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_items, max_size=8, unique_by=lambda item: item.id))
def test_load_of_save_is_identity(items: list[QueueItem]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        save_queue(Path(tmp), items, durable=False)
        assert load_queue(Path(tmp)) == items


@settings(max_examples=50, deadline=None)
@given(st.lists(_items, min_size=1, max_size=4, unique_by=lambda item: item.id), st.data())
def test_any_truncation_reads_as_empty_or_whole(items: list[QueueItem], data: st.DataObject) -> None:
    """A torn write (never produced by ``save_queue``, but by an outside copy) is never half-read."""
    encoded = msgspec.json.encode(q.QueueFile(items=items))
    cut = data.draw(st.integers(min_value=0, max_value=len(encoded) - 1))
    with tempfile.TemporaryDirectory() as tmp:
        write(Path(tmp), encoded[:cut])
        assert load_queue(Path(tmp)) == []


# --- the store -----------------------------------------------------------------------------------------


def _clock() -> datetime:
    return datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


async def test_store_applies_and_persists(tmp_path: Path) -> None:
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    effects = await store.transition(Enqueue(task="one", item_id="a"))
    assert effects.item is not None and effects.item.queued_at == "2024-05-01T12:00:00.000Z"
    assert store.load() == await store.read() == [effects.item]
    assert load_queue(tmp_path) == [effects.item]


async def test_concurrent_applies_are_serialized_and_all_land(tmp_path: Path) -> None:
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    seen_locked: list[bool] = []

    def enqueue(n: int) -> Callable[[list[QueueItem]], tuple[list[QueueItem], int]]:
        def fn(items: list[QueueItem]) -> tuple[list[QueueItem], int]:
            seen_locked.append(store._lock.locked())
            after, _ = q.transition(items, Enqueue(task=f"t{n}", item_id=f"id{n}"), _clock() + timedelta(seconds=n))
            return after, len(after)

        return fn

    results: list[int] = []

    async def one(n: int) -> None:
        await trio.lowlevel.checkpoint()
        results.append(await store.apply(enqueue(n)))

    async with trio.open_nursery() as nursery:
        for n in range(60):
            nursery.start_soon(one, n)
    assert all(seen_locked) and len(seen_locked) == 60
    assert sorted(results) == list(range(1, 61))
    assert sorted(i.id for i in load_queue(tmp_path)) == sorted(f"id{n}" for n in range(60))


async def test_a_refused_transition_writes_nothing(tmp_path: Path) -> None:
    save_queue(tmp_path, [it("a", "done", settled_at=QUEUED)], durable=False)
    before = queue_path(tmp_path).read_bytes()
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    with pytest.raises(q.QueueTransitionError):
        await store.transition(Cancel("a"))
    with pytest.raises(QueueNotFound):
        await store.transition(Cancel("nope"))
    assert queue_path(tmp_path).read_bytes() == before


async def test_an_unchanged_list_is_not_rewritten(tmp_path: Path) -> None:
    write(tmp_path, "{torn")
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    assert await store.apply(lambda items: (items, "same")) == "same"
    assert queue_path(tmp_path).read_text() == "{torn"
    await store.transition(Enqueue(task="t", item_id="a"))
    assert [i.id for i in load_queue(tmp_path)] == ["a"]


async def test_a_cancel_while_waiting_for_the_lock_changes_nothing(tmp_path: Path) -> None:
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    release = trio.Event()

    async def hold(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with store._lock:
            task_status.started()
            await release.wait()

    async with trio.open_nursery() as nursery:
        await nursery.start(hold)
        with trio.CancelScope() as scope:
            nursery.start_soon(lambda: _cancel_when_blocked(scope))
            await store.transition(Enqueue(task="t", item_id="a"))
        release.set()
    assert scope.cancelled_caught
    assert not queue_path(tmp_path).exists()


async def test_apply_runs_without_a_checkpoint_between_read_and_write(tmp_path: Path) -> None:
    """Once the lock is held, the read-modify-write has no checkpoint: a pending cancel cannot split it."""
    store = QueueStore(tmp_path, durable=False, clock=_clock)
    await store.transition(Enqueue(task="t", item_id="a"))
    with trio.testing.assert_checkpoints():
        await store.transition(Enqueue(task="u", item_id="b"))
    assert [i.id for i in load_queue(tmp_path)] == ["a", "b"]


async def _cancel_when_blocked(scope: trio.CancelScope) -> None:
    await trio.testing.wait_all_tasks_blocked()
    scope.cancel()
