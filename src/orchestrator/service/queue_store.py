"""``.orchestration/queue.json`` on disk: tolerant load, atomic save, and the lock that serializes transitions.

Reading is tolerant by design: a missing, unreadable or malformed file reads
as an empty queue, and so does a file with ONE invalid item (a bad status, an empty task, a run id
that is not ``run-YYYYMMDD-HHMMSS``, an unparseable timestamp, a duplicated id). We do not salvage the
valid items of a damaged file: a partial queue could re-run or silently drop work in ways an empty
one cannot, and the file is only ever written whole and atomically, so damage means an outside edit.
Nothing is logged; the next save replaces the file.

With a ``QueueSeal`` (``serve`` always passes one) every read is quarantined and every write sealed
(``queue_seal``): an item the service did not accept itself reads as ``unconfirmed`` and is never
dispatched until confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeVar

import msgspec
import trio

from orchestrator.fsutil import atomic_write
from orchestrator.service.queue import Effects, QueueEvent, QueueFile, QueueItem, transition
from orchestrator.service.queue_seal import QueueSeal, quarantine, seal_items

__all__ = ["QueueStore", "load_queue", "queue_path", "save_queue"]

T = TypeVar("T")

_decoder = msgspec.json.Decoder(QueueFile)
_encoder = msgspec.json.Encoder()


def queue_path(workspace: Path) -> Path:
    return workspace / ".orchestration" / "queue.json"


def load_queue(workspace: Path) -> list[QueueItem]:
    """The queue, head first; ``[]`` when the file is missing, unreadable or holds any invalid item."""
    try:
        items = _decoder.decode(queue_path(workspace).read_bytes()).items
    except (OSError, msgspec.DecodeError, RecursionError):
        return []
    if len({item.id for item in items}) != len(items):
        return []
    return items


def save_queue(workspace: Path, items: Sequence[QueueItem], *, durable: bool = True) -> None:
    """Replace ``queue.json`` atomically (temp + fsync + rename), creating ``.orchestration/``."""
    path = queue_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, _encoder.encode(QueueFile(items=list(items))), durable=durable)


class QueueStore:
    """The one writer of ``queue.json`` in this process: every change is a whole-file read-modify-write
    under a ``trio.Lock``, with no await between the read and the write.

    Cancellation: a cancel can only land while waiting for the lock, before anything was read, so a
    transition is applied whole or not at all.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        durable: bool = True,
        clock: Callable[[], datetime] | None = None,
        seal: QueueSeal | None = None,
    ) -> None:
        self.workspace = workspace
        self.seal = seal
        self.durable = durable
        self._clock = clock or (lambda: datetime.now(UTC))
        self._lock = trio.Lock()

    def load(self) -> list[QueueItem]:
        """The items as on disk now, without the lock (a save is atomic, so this never sees a torn file)."""
        return self._load()

    def _load(self) -> list[QueueItem]:
        items = load_queue(self.workspace)
        return items if self.seal is None else quarantine(items, self.seal)

    async def read(self) -> list[QueueItem]:
        """The current items (a consistent snapshot: taken under the lock)."""
        async with self._lock:
            return self._load()

    async def apply(self, fn: Callable[[list[QueueItem]], tuple[list[QueueItem], T]]) -> T:
        """Load, apply the pure ``fn``, save when the list changed, and return ``fn``'s result.

        Raises whatever ``fn`` raises (e.g. ``QueueError``); then nothing is written.
        """
        async with self._lock:
            on_disk = load_queue(self.workspace)
            items = on_disk if self.seal is None else quarantine(on_disk, self.seal)
            new_items, result = fn(list(items))
            if self.seal is not None:
                new_items = seal_items(items, new_items, self.seal)
            if new_items != on_disk:
                save_queue(self.workspace, new_items, durable=self.durable)
            return result

    async def transition(self, event: QueueEvent, now: datetime | None = None) -> Effects:
        """``apply`` one ``queue.transition`` event at ``now`` (default: the store's clock)."""
        at = now or self._clock()
        return await self.apply(lambda items: transition(items, event, at))
