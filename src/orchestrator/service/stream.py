"""The live token stream's socket protocol and limits (the ``/ws/stream`` route is ``routes.stream``),
so sockets cannot pile up.

- at most ``max_sockets`` at once (default 64); one more is accepted and closed with 1013 (try again);
- the first message (``subscribe`` or ``ping``) must come within ``first_message_seconds`` (default 30),
  and then some message at least every ``idle_seconds`` (default 90), else the socket is closed with
  1008; the UI pings every 20 s and the server answers ``{"type":"pong"}``, so a live page never trips it;
- after the ``subscribed`` ack, the text the run's turn in flight streamed so far (``StreamHub.catch_up``)
  comes as one ``reset`` delta (plus one for its other field) carrying ``since``, so a page that opens
  mid-turn, or subscribes a moment after the run's first tokens, loses nothing;
- on shutdown every socket gets 1001 (hypercorn would otherwise cut them off with 1006).

The limits come from ``ORCHESTRATOR_WS_MAX_SOCKETS``, ``ORCHESTRATOR_WS_FIRST_MESSAGE_SECONDS`` and
``ORCHESTRATOR_WS_IDLE_SECONDS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import msgspec
import trio
from quart import websocket

from orchestrator.errors import ConfigError
from orchestrator.service.core import Service
from orchestrator.service.hub import Subscription, frames

__all__ = ["StreamLimits", "handle_message", "serve_socket", "stream_limits_from_env"]

_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


@dataclass(frozen=True)
class StreamLimits:
    max_sockets: int = 64
    first_message_seconds: float = 30.0
    idle_seconds: float = 90.0


def _positive(env: Mapping[str, str], name: str, default: float, *, integer: bool = False) -> float:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw) if integer else float(raw)
    except ValueError:
        value = -1
    if not (0 < value < 1e9):
        kind = "a positive integer" if integer else "a positive number of seconds"
        raise ConfigError(f"{name}={raw!r}: must be {kind}")
    return value


def stream_limits_from_env(env: Mapping[str, str]) -> StreamLimits:
    return StreamLimits(
        max_sockets=int(_positive(env, "ORCHESTRATOR_WS_MAX_SOCKETS", 64, integer=True)),
        first_message_seconds=_positive(env, "ORCHESTRATOR_WS_FIRST_MESSAGE_SECONDS", 30.0),
        idle_seconds=_positive(env, "ORCHESTRATOR_WS_IDLE_SECONDS", 90.0),
    )


async def serve_socket(service: Service, limits: StreamLimits) -> None:
    """Serve the request's websocket until it closes: forward the subscribed run's frames, answer
    pings and subscriptions, close with 1008 when silent too long and 1001 when the service stops."""
    subscription = service.hub.subscribe()
    try:
        async with trio.open_nursery() as nursery:

            async def forward() -> None:
                async for first in subscription.receive:
                    batch = [first]
                    while True:  # whatever else is already buffered goes out merged
                        try:
                            batch.append(subscription.receive.receive_nowait())
                        except (trio.WouldBlock, trio.EndOfChannel):
                            break
                    for message, text in frames(batch, _encoder):
                        if message.run_id == subscription.run_id:  # not a leftover of a replaced subscription
                            await websocket.send(text)
                nursery.cancel_scope.cancel()  # dropped as too slow: close the socket

            async def close_when_stopping() -> None:
                await service.stopping.wait()
                await websocket.close(1001, "server shutting down")
                nursery.cancel_scope.cancel()

            nursery.start_soon(forward)
            nursery.start_soon(close_when_stopping)
            await websocket.accept()
            timeout = limits.first_message_seconds
            while True:
                message: str | bytes | None = None
                with trio.move_on_after(timeout):
                    message = await websocket.receive()
                if message is None:
                    await websocket.close(1008, "silent for too long (send a ping)")
                    nursery.cancel_scope.cancel()
                    return
                timeout = limits.idle_seconds
                reply = handle_message(message, subscription)
                if reply is not None:
                    await websocket.send(reply)
                if subscription.catch_up_due:  # after the ack: the turn text streamed before it
                    subscription.catch_up()
    finally:
        subscription.close()


def handle_message(message: str | bytes, subscription: Subscription) -> str | None:
    """A client message → the reply (``subscribed`` ack, ``pong``), or ``None``; malformed ones are ignored."""
    try:
        parsed = _decoder.decode(message)
    except (msgspec.DecodeError, RecursionError, TypeError):
        return None
    if not isinstance(parsed, dict):
        return None
    kind = parsed.get("type")
    if kind == "ping":
        return '{"type":"pong"}'
    if kind == "subscribe" and isinstance(parsed.get("runId"), str):
        subscription.follow(parsed["runId"])
        return _encoder.encode({"type": "subscribed", "runId": parsed["runId"]}).decode()
    return None
