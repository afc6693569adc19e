"""Live token stream fan-out: best effort, bounded, never backpressures the run.

The run calls ``publish`` synchronously from its streaming hot path; each subscriber has a small
bounded memory channel, and a subscriber whose channel is full (a slow or dead viewer) is dropped on
the spot. Nothing here blocks, awaits or raises into the run.
"""

from __future__ import annotations

from typing import NamedTuple

import msgspec
import trio

from orchestrator.engine.run import StreamDelta

__all__ = ["SUBSCRIBER_BUFFER", "DeltaMessage", "Outgoing", "StreamHub", "Subscription", "coalesce", "frames"]

#: Deltas buffered per subscriber before it counts as too slow and is dropped.
SUBSCRIBER_BUFFER = 256


class DeltaMessage(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, tag_field="type", tag="delta"):
    """Server → client ``{"type":"delta","runId","roleId","role","field","text","reset"?}``.

    ``type`` is the struct tag: a tag is always encoded, where a defaulted field would be omitted."""

    run_id: str
    role_id: str
    role: str
    field: str
    text: str
    reset: bool = False


class Outgoing(NamedTuple):
    """A delta and its wire text, encoded once by ``publish`` for every subscriber."""

    message: DeltaMessage
    text: str


class Subscription:
    """One WebSocket's view of the hub: which run it follows, and its receive channel of
    ``Outgoing`` deltas (the sender skips messages whose run is no longer the subscribed one, so a
    re-subscribe also drops what was buffered for the previous run)."""

    def __init__(self, hub: StreamHub) -> None:
        self.run_id: str | None = None
        self._send, self.receive = trio.open_memory_channel[Outgoing](SUBSCRIBER_BUFFER)
        self._hub = hub
        self.dropped = False

    def offer(self, message: Outgoing) -> None:
        try:
            self._send.send_nowait(message)
        except trio.WouldBlock:
            self.dropped = True
            self._hub.remove(self)
            self._send.close()
        except trio.ClosedResourceError:
            self._hub.remove(self)

    def close(self) -> None:
        self._hub.remove(self)
        self._send.close()


class StreamHub:
    """Subscribers keyed by nothing: each filters on its own ``run_id``; only the active run publishes."""

    def __init__(self) -> None:
        self._subscribers: set[Subscription] = set()
        self._encoder = msgspec.json.Encoder()
        self.active_run: str | None = None

    def subscribe(self) -> Subscription:
        subscription = Subscription(self)
        self._subscribers.add(subscription)
        return subscription

    def remove(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)

    @property
    def subscriber_count(self) -> int:
        return len(self._subscribers)

    def publish(self, delta: StreamDelta) -> None:
        """Called by the run for every streamed delta. Never blocks; drops subscribers that lag."""
        if delta.run_id != self.active_run or not self._subscribers:
            return
        message = DeltaMessage(
            run_id=delta.run_id,
            role_id=delta.role_id,
            role=delta.role,
            field=delta.field,
            text=delta.text,
            reset=delta.reset,
        )
        outgoing = Outgoing(message, self._encoder.encode(message).decode())
        for subscription in list(self._subscribers):
            if subscription.run_id == delta.run_id:
                subscription.offer(outgoing)


def coalesce(messages: list[DeltaMessage]) -> list[DeltaMessage]:
    """Merge consecutive deltas of the same run, instance and field into one (pure).

    A ``reset`` delta always starts a new message, so a client still clears its text exactly when the
    stream restarted; merging only saves sends when a viewer falls behind the model.
    """
    merged: list[DeltaMessage] = []
    for message in messages:
        last = merged[-1] if merged else None
        if (
            last is not None
            and not message.reset
            and (last.run_id, last.role_id, last.field) == (message.run_id, message.role_id, message.field)
        ):
            merged[-1] = msgspec.structs.replace(last, text=last.text + message.text)
        else:
            merged.append(message)
    return merged


def frames(batch: list[Outgoing], encoder: msgspec.json.Encoder) -> list[tuple[DeltaMessage, str]]:
    """The text frames to send for what a subscriber had buffered: the shared encodings when it kept
    up (one message), the ``coalesce``d messages freshly encoded when it fell behind."""
    if len(batch) == 1:
        return [batch[0]]
    return [(message, encoder.encode(message).decode()) for message in coalesce([o.message for o in batch])]
