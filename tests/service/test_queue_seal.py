"""Queue items bound to this service: seals, quarantine and the store applying them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec

from orchestrator.service import queue as q
from orchestrator.service.queue_items import QueueItem
from orchestrator.service.queue_seal import QueueSeal, item_view, load_seal, quarantine, seal_items
from orchestrator.service.queue_store import QueueStore, load_queue, save_queue

SEAL = QueueSeal(b"k" * 32, "/ws")
NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _item(item_id: str = "a", status: str = "waiting", task: str = "t") -> QueueItem:
    return QueueItem(id=item_id, task=task, status=status, queued_at="2026-01-01T00:00:00.000Z")  # type: ignore[arg-type]


def test_a_seal_binds_the_key_the_workspace_and_every_field() -> None:
    sealed = msgspec.structs.replace(_item(), seal=SEAL.of(_item()))
    assert SEAL.valid(sealed)
    assert not QueueSeal(b"x" * 32, "/ws").valid(sealed)
    assert not QueueSeal(b"k" * 32, "/other").valid(sealed)
    assert not SEAL.valid(msgspec.structs.replace(sealed, task="rm -rf ~"))
    assert not SEAL.valid(_item())


def test_quarantine_holds_back_what_could_run_and_leaves_settled_history() -> None:
    items = [_item("w"), _item("e", "error"), _item("d", "done"), _item("c", "cancelled")]
    assert [i.status for i in quarantine(items, SEAL)] == ["unconfirmed", "unconfirmed", "done", "cancelled"]
    assert item_view(_item("d", "done"), SEAL)["fromThisService"] is False
    mine = msgspec.structs.replace(_item(), seal=SEAL.of(_item()))
    assert item_view(mine, SEAL) == {"id": "a", "task": "t", "status": "waiting", "queuedAt": mine.queued_at}


def test_sealing_vouches_for_new_sealed_and_confirmed_items_only() -> None:
    before = quarantine([_item("foreign"), _item("old", "done")], SEAL)
    after, _ = q.transition(before, q.Enqueue(task="mine", item_id="new"), NOW)
    sealed = seal_items(before, after, SEAL)
    assert [SEAL.valid(i) for i in sealed] == [False, False, True]
    confirmed, effects = q.transition(sealed, q.Confirm("foreign"), NOW)
    assert effects.tick and confirmed[0].status == "waiting"
    assert [SEAL.valid(i) for i in seal_items(sealed, confirmed, SEAL)] == [True, False, True]


async def test_the_store_quarantines_on_read_and_seals_on_write(tmp_path: Path) -> None:
    save_queue(tmp_path, [_item("planted")], durable=False)
    store = QueueStore(
        tmp_path, durable=False, seal=load_seal(tmp_path, {"ORCHESTRATOR_STATE_DIR": str(tmp_path / "s")})
    )
    assert [i.status for i in store.load()] == ["unconfirmed"]
    assert q.next_dispatch(store.load()) is None
    await store.transition(q.Enqueue(task="mine", item_id="mine"))
    on_disk = {i.id: i for i in load_queue(tmp_path)}
    assert on_disk["planted"].status == "unconfirmed" and on_disk["planted"].seal is None
    assert store.seal is not None and store.seal.valid(on_disk["mine"])
    assert q.next_dispatch(store.load()) == on_disk["mine"]
    await store.transition(q.Confirm("planted"))
    assert all(store.seal.valid(i) for i in load_queue(tmp_path))
