"""Queue items bound to this service: an HMAC seal, and the quarantine of every item without one.

``.orchestration/queue.json`` sits in the workspace, so a checkout can carry one (it survives
``git clone``). The service therefore dispatches only items it accepted itself: each item it writes
carries ``seal`` = HMAC-SHA256 over the workspace's resolved path and the item's other fields, with a
key kept in the user's state directory (``<state dir>/queue-key``, :mod:`orchestrator.statedir`), never
in the workspace. An item whose seal is missing or wrong — planted, copied from elsewhere, or edited by
hand — is *quarantined*: a ``waiting``/``active``/``needs_input``/``error`` one becomes ``unconfirmed``
(never dispatched) until the operator confirms it (``POST /api/queue/<id>/confirm``); a ``done`` or
``cancelled`` one cannot run and is only shown as not from this service.

Pure functions over the item list; :class:`~orchestrator.service.queue_store.QueueStore` applies them
around every read and write.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from orchestrator.service.queue_items import QueueItem
from orchestrator.statedir import read_or_create_key, state_dir

__all__ = ["QUARANTINED_STATUSES", "QueueSeal", "item_view", "load_seal", "quarantine", "seal_items"]

#: Statuses from which an item can reach a run; an unsealed item in one of them becomes ``unconfirmed``.
QUARANTINED_STATUSES: frozenset[str] = frozenset({"waiting", "active", "needs_input", "error"})
_DOMAIN = b"orchestrator queue item v1\0"
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class QueueSeal:
    """The key and the workspace an item is bound to."""

    key: bytes
    workspace: str

    def of(self, item: QueueItem) -> str:
        body = _encoder.encode(msgspec.structs.replace(item, seal=None))
        message = _DOMAIN + self.workspace.encode("utf-8", "surrogateescape") + b"\0" + body
        return hmac.new(self.key, message, hashlib.sha256).hexdigest()

    def valid(self, item: QueueItem) -> bool:
        return item.seal is not None and hmac.compare_digest(item.seal, self.of(item))


def load_seal(workspace: Path, env: Mapping[str, str]) -> QueueSeal:
    """The seal for ``workspace``, its key read (or created once) in the state directory."""
    return QueueSeal(read_or_create_key(state_dir(env) / "queue-key"), str(workspace.resolve()))


def quarantine(items: Sequence[QueueItem], seal: QueueSeal) -> list[QueueItem]:
    """Every unsealed item that could still run, made ``unconfirmed`` (its seal dropped)."""
    return [
        msgspec.structs.replace(item, status="unconfirmed", run_id=None, seal=None)
        if item.status in QUARANTINED_STATUSES and not seal.valid(item)
        else item
        for item in items
    ]


def seal_items(before: Sequence[QueueItem], after: Sequence[QueueItem], seal: QueueSeal) -> list[QueueItem]:
    """``after`` (the result of one transition on the quarantined ``before``) with a fresh seal on every
    item this service vouches for: one sealed before, one the transition created, one just confirmed.
    An ``unconfirmed`` item, and a settled foreign one, stay unsealed."""
    sealed_ids = {item.id for item in before if seal.valid(item)}
    prior = {item.id: item.status for item in before}
    result = []
    for item in after:
        vouched = (
            item.id in sealed_ids
            or item.id not in prior
            or (prior[item.id] == "unconfirmed" and item.status == "waiting")
        )
        if item.status != "unconfirmed" and vouched:
            if not seal.valid(item):
                item = msgspec.structs.replace(item, seal=seal.of(item))
        elif item.seal is not None:
            item = msgspec.structs.replace(item, seal=None)
        result.append(item)
    return result


def item_view(item: QueueItem, seal: QueueSeal | None) -> dict[str, Any]:
    """An item as the API shows it: no seal, and ``fromThisService: false`` on one it did not accept
    (absent otherwise, like every other field at its default)."""
    view: dict[str, Any] = msgspec.to_builtins(msgspec.structs.replace(item, seal=None))
    if seal is not None and not seal.valid(item):
        view["fromThisService"] = False
    return view
