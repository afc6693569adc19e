"""Live token stream fan-out: best effort, bounded, never backpressures the run.

The run calls ``publish`` synchronously from its streaming hot path; each subscriber has a small
bounded memory channel, and a subscriber whose channel is full (a slow or dead viewer) is dropped on
the spot. Nothing here blocks, awaits or raises into the run.

The hub also keeps the text of each instance's turn in flight so far (``PartialTexts``, the active run
only, bounded): a socket that subscribes mid-turn — the page opened late, or the shell subscribing a
moment after the run's first tokens — first gets that text as a ``reset`` delta, then the live deltas,
so nothing streamed before the subscription is lost. Every ``reset`` carries ``since`` (when the turn's
first token came, on the server's clock), which a client compares with the log's timestamps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import msgspec
import trio

from orchestrator.engine.run import StreamDelta
from orchestrator.runlog.writer import utc_timestamp

__all__ = [
    "PARTIAL_CHARS",
    "PARTIAL_INSTANCES",
    "SUBSCRIBER_BUFFER",
    "DeltaMessage",
    "Outgoing",
    "PartialTexts",
    "StreamHub",
    "Subscription",
    "coalesce",
    "frames",
]

#: Deltas buffered per subscriber before it counts as too slow and is dropped.
SUBSCRIBER_BUFFER = 256
#: Per-field characters of a turn's text the hub keeps for late subscribers (the head is dropped).
PARTIAL_CHARS = 64_000
#: Instances whose turn text the hub keeps (the least recently streamed go first).
PARTIAL_INSTANCES = 32


class DeltaMessage(msgspec.Struct, kw_only=True, rename="camel", omit_defaults=True, tag_field="type", tag="delta"):
    """Server → client ``{"type":"delta","runId","roleId","role","field","text","reset"?}``.

    ``type`` is the struct tag: a tag is always encoded, where a defaulted field would be omitted."""

    run_id: str
    role_id: str
    role: str
    field: str
    text: str
    reset: bool = False
    #: on a ``reset`` (a turn's first delta, or a catch-up): when the turn's first token came (UTC, the
    #: log's format), so a client compares it with the log's timestamps on one clock
    since: str | None = None


class _Partial:
    """One instance's turn text so far: chunks per field (joined on demand, so appends stay cheap)."""

    __slots__ = ("chunks", "role", "since", "sizes")

    def __init__(self, role: str, since: str) -> None:
        self.role = role
        self.since = since
        self.chunks: dict[str, list[str]] = {"reasoning": [], "content": []}
        self.sizes: dict[str, int] = {"reasoning": 0, "content": 0}

    def add(self, field: str, text: str) -> None:
        chunks = self.chunks.setdefault(field, [])
        chunks.append(text)
        self.sizes[field] = self.sizes.get(field, 0) + len(text)
        if self.sizes[field] > 2 * PARTIAL_CHARS:
            kept = "".join(chunks)[-PARTIAL_CHARS:]
            self.chunks[field], self.sizes[field] = [kept], len(kept)

    def text(self, field: str) -> str:
        return "".join(self.chunks.get(field, ()))[-PARTIAL_CHARS:]


class PartialTexts:
    """The text of each instance's turn in flight, folded from deltas (a ``reset`` starts it afresh)."""

    def __init__(self) -> None:
        self.run_id: str | None = None
        self._turns: dict[str, _Partial] = {}

    def apply(self, delta: StreamDelta, now: Callable[[], str]) -> str:
        """Fold ``delta``; returns when its turn's text started (UTC, the log's format)."""
        if delta.run_id != self.run_id:
            self.run_id, self._turns = delta.run_id, {}
        turn = self._turns.pop(delta.role_id, None)
        if turn is None or delta.reset:
            turn = _Partial(delta.role, now())
        self._turns[delta.role_id] = turn
        while len(self._turns) > PARTIAL_INSTANCES:
            del self._turns[next(iter(self._turns))]
        turn.add(delta.field, delta.text)
        return turn.since

    def catch_up(self, run_id: str) -> list[DeltaMessage]:
        """What a new subscriber to ``run_id`` needs first: the text of the turn streamed last (a run has
        one model turn in flight at a time), as a ``reset`` delta with ``since`` for its first non-empty
        field and a plain one for the other — or one empty ``reset`` when its first tokens are still held
        back (``redaction_stream``: a word waits for its end), so the subscriber still learns that the
        turn started, and when; nothing for another run or before any token."""
        if run_id != self.run_id or not self._turns:
            return []
        role_id, turn = next(reversed(self._turns.items()))
        out: list[DeltaMessage] = []
        for field in ("reasoning", "content"):
            text = turn.text(field)
            if text:
                out.append(
                    DeltaMessage(
                        run_id=run_id,
                        role_id=role_id,
                        role=turn.role,
                        field=field,
                        text=text,
                        reset=not out,
                        since=None if out else turn.since,
                    )
                )
        if not out:
            out.append(
                DeltaMessage(
                    run_id=run_id,
                    role_id=role_id,
                    role=turn.role,
                    field="content",
                    text="",
                    reset=True,
                    since=turn.since,
                )
            )
        return out


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
        self.catch_up_due = False

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

    def follow(self, run_id: str) -> None:
        """Follow ``run_id`` from now on; ``catch_up`` is due (the socket sends its ack first)."""
        self.run_id = run_id
        self.catch_up_due = True

    def catch_up(self) -> None:
        """Queue the text the followed run's turn in flight streamed so far, as a ``reset`` delta.

        Synchronous, so no delta can slip in between; one that was sent before it is part of that
        text, which the ``reset`` replaces whole — the client ends with exactly what was streamed."""
        self.catch_up_due = False
        if self.run_id is not None:
            for outgoing in self._hub.catch_up(self.run_id):
                self.offer(outgoing)


class StreamHub:
    """Subscribers keyed by nothing: each filters on its own ``run_id``; only the active run publishes."""

    def __init__(self, now: Callable[[], str] = utc_timestamp) -> None:
        """``now``: the clock of a turn's ``since`` (the log's UTC format)."""
        self._subscribers: set[Subscription] = set()
        self._encoder = msgspec.json.Encoder()
        self.active_run: str | None = None
        self.partials = PartialTexts()
        self._now = now

    def catch_up(self, run_id: str) -> list[Outgoing]:
        """The turn text streamed so far for a subscriber that starts following ``run_id`` now."""
        if run_id != self.active_run:
            return []
        return [Outgoing(m, self._encoder.encode(m).decode()) for m in self.partials.catch_up(run_id)]

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
        if delta.run_id != self.active_run:
            return
        since = self.partials.apply(delta, self._now)
        if not self._subscribers:
            return
        message = DeltaMessage(
            run_id=delta.run_id,
            role_id=delta.role_id,
            role=delta.role,
            field=delta.field,
            text=delta.text,
            reset=delta.reset,
            since=since if delta.reset else None,  # every restart says when, on the server's clock
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
