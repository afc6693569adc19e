"""Live token stream fan-out: best effort, bounded, never backpressures the run.

The run calls ``publish`` synchronously from its streaming hot path; each subscriber has a small
bounded memory channel, and a subscriber whose channel is full (a slow or dead viewer) is dropped on
the spot. Nothing here blocks, awaits or raises into the run.
"""

from __future__ import annotations

import msgspec
import trio

from orchestrator.engine.run import StreamDelta

__all__ = ["SUBSCRIBER_BUFFER", "DeltaMessage", "StreamHub", "Subscription"]

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


class Subscription:
    """One WebSocket's view of the hub: which run it follows, and its receive channel of
    ``(run_id, payload)`` pairs (the sender skips pairs whose run is no longer the subscribed one, so a
    re-subscribe also drops what was buffered for the previous run)."""

    def __init__(self, hub: StreamHub) -> None:
        self.run_id: str | None = None
        self._send, self.receive = trio.open_memory_channel[tuple[str, bytes]](SUBSCRIBER_BUFFER)
        self._hub = hub
        self.dropped = False

    def offer(self, run_id: str, payload: bytes) -> None:
        try:
            self._send.send_nowait((run_id, payload))
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
        payload = self._encoder.encode(
            DeltaMessage(
                run_id=delta.run_id,
                role_id=delta.role_id,
                role=delta.role,
                field=delta.field,
                text=delta.text,
                reset=delta.reset,
            )
        )
        for subscription in list(self._subscribers):
            if subscription.run_id == delta.run_id:
                subscription.offer(delta.run_id, payload)
